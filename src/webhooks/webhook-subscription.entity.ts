import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A receiver of plant-added webhooks, managed with `node dist/cli.js webhooks`. */
@Entity('webhook_subscriptions')
export class WebhookSubscription {
  /** A UUID made by the service. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
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

  @Column({ name: 'removed_at', type: Date, nullable: true })
  removedAt!: Date | null;
}
