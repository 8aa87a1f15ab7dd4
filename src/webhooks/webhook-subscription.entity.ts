import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryGeneratedColumn,
} from 'typeorm';

/** A receiver of plant-added webhooks, managed with `node dist/cli.js webhooks`. */
@Entity('webhook_subscriptions')
export class WebhookSubscription {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  url!: string;

  /**
   * `whsec_<base64>`. Kept in clear, unlike API tokens: signing needs the key itself, where
   * checking a token only needs its hash.
   */
  @Column({ type: 'text' })
  secret!: string;

  @CreateDateColumn({ name: 'created_at' })
  createdAt!: Date;

  @Column({ name: 'removed_at', type: 'datetime', nullable: true })
  removedAt!: Date | null;
}
