import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryColumn,
  type ValueTransformer,
} from 'typeorm';

/** A list of event types as `a,b`; NULL for every type, those added later included. */
const eventTypesTransformer: ValueTransformer = {
  to: (types: string[] | null | undefined) =>
    types === undefined ? undefined : (types?.join(',') ?? null),
  from: (text: string | null) => (text === null ? null : text.split(',')),
};

/** A receiver of webhooks, managed over HTTP (/webhooks/subscriptions) or with the CLI. */
@Entity('webhook_subscriptions')
export class WebhookSubscription {
  /** A UUID made by the service. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ type: 'text' })
  url!: string;

  /** The event types it receives; null for all of them. */
  @Column({
    name: 'event_types',
    type: 'text',
    nullable: true,
    transformer: eventTypesTransformer,
  })
  eventTypes!: string[] | null;

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
