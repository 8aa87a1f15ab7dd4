/** The part of pg-pool's Pool that TypeORM's driver calls to take a connection. */
export interface CallbackPool {
  connect(
    callback: (
      error: Error | undefined,
      client: unknown,
      release: (error?: unknown) => void,
    ) => void,
  ): void;
}
