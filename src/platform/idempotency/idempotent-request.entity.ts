import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { SmallIntegerColumn } from '../database/columns';

/**
 * A request sent with an `Idempotency-Key`, per caller and key (docs/decisions.md,
 * "Idempotency keys"): while it runs, the lease that keeps its repeats out; once answered, its
 * answer, which repeats get instead of running it again. Kept until `expiresAt`.
 */
@Entity('idempotency_keys')
// the background sweep deletes the expired ones, oldest first
@Index('IDX_idempotency_keys_expires_at', ['expiresAt'])
export class IdempotentRequest {
  /**
   * Who sent it (`token:<id>`, `jwt:<sub>@<iss>`, or `sha256:<digest>` of one longer than
   * the column: idempotency.runner.ts, `storedCaller`): the same key from another caller is
   * another key.
   */
  @PrimaryColumn({ type: 'varchar', length: 80 })
  caller!: string;

  @PrimaryColumn({ name: 'idempotency_key', type: 'varchar', length: 255 })
  key!: string;

  /** SHA-256 of its method, path and body bytes, in base64url. */
  @Column({ type: 'varchar', length: 43 })
  fingerprint!: string;

  /** The running attempt's own id; null once the answer is stored. */
  @Column({ name: 'lease_id', type: 'varchar', length: 36, nullable: true })
  leaseId!: string | null;

  /** When a repeat may take the key over from a running attempt that never answered. */
  @Column({ name: 'lease_expires_at', type: Date, nullable: true })
  leaseExpiresAt!: Date | null;

  /** The stored answer's status; null while the request runs. */
  @SmallIntegerColumn({ nullable: true })
  status!: number | null;

  /** The stored answer's own headers, as a JSON object. */
  @Column({ type: 'text', nullable: true })
  headers!: string | null;

  /** The stored answer's body, the JSON text as it was sent. */
  @Column({ type: 'text', nullable: true })
  body!: string | null;

  @Column({ name: 'created_at', type: Date })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: Date })
  expiresAt!: Date;
}
