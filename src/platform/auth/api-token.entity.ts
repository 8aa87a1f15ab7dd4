import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryColumn,
} from 'typeorm';
import type { Scope } from './scopes';

@Entity('api_tokens')
export class ApiToken {
  // a UUID made by the service, not an autoincrement: TypeORM reads SQLite's last rowid as a
  // number, and safe integers make it a bigint
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  /** SHA-256 of the token, hex; the token itself is never stored. */
  @Index({ unique: true })
  @Column({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash!: string;

  @Column({ type: 'simple-array' })
  scopes!: Scope[];

  @CreateDateColumn({ name: 'created_at' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: Date, nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'revoked_at', type: Date, nullable: true })
  revokedAt!: Date | null;

  @Column({ name: 'last_used_at', type: Date, nullable: true })
  lastUsedAt!: Date | null;
}
