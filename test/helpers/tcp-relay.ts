import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP relay on loopback in front of a dependency (PostgreSQL, Redis), that a test can pause
 * to stand for a network partition: while paused, connections are accepted and bytes are
 * taken in, but nothing is passed on or answered; nothing is refused or reset either. Resuming
 * passes on what was held. `cut` stands for a dependency that went down instead: every
 * connection dropped, new ones refused, until `restore`.
 */
export class TcpRelay {
  private paused = false;
  private readonly sockets = new Set<Socket>();
  /** Connections accepted while paused, opened upstream on resume. */
  private readonly unopened: (() => void)[] = [];
  /** Each direction of each connection passes on its held bytes on resume. */
  private readonly flushers = new Set<() => void>();

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly port: number,
  ) {}

  static start(targetHost: string, targetPort: number): Promise<TcpRelay> {
    return new Promise((resolve, reject) => {
      const server = createServer((client) => relay.accept(client, target));
      const target = { host: targetHost, port: targetPort };
      let relay: TcpRelay;
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        relay = new TcpRelay(server, (server.address() as AddressInfo).port);
        resolve(relay);
      });
    });
  }

  private accept(client: Socket, target: { host: string; port: number }) {
    this.track(client);
    const open = () => {
      if (client.destroyed) return;
      const upstream = connect(target.port, target.host);
      this.track(upstream);
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
      this.pipe(client, upstream);
      this.pipe(upstream, client);
    };
    if (this.paused) this.unopened.push(open);
    else open();
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  /** `from`'s bytes go to `to` while the relay runs; while it is paused they are held. */
  private pipe(from: Socket, to: Socket): void {
    const held: Buffer[] = [];
    const flush = () => {
      for (const chunk of held.splice(0)) to.write(chunk);
    };
    this.flushers.add(flush);
    from.on('close', () => this.flushers.delete(flush));
    from.on('data', (chunk: Buffer) => {
      if (this.paused) held.push(chunk);
      else to.write(chunk);
    });
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const flush of this.flushers) flush();
    for (const open of this.unopened.splice(0)) open();
  }

  get isCut(): boolean {
    return !this.server.listening;
  }

  cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  restore(): Promise<void> {
    return new Promise((resolve) =>
      this.server.listen(this.port, '127.0.0.1', resolve),
    );
  }

  /** `url` (postgres://, redis://) with its host and port replaced by the relay's. */
  relayed(url: string): string {
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(this.port);
    return through.toString();
  }

  /** A relay to the host and port of `url`. */
  static to(url: string, defaultPort: number): Promise<TcpRelay> {
    const target = new URL(url);
    return TcpRelay.start(target.hostname, Number(target.port || defaultPort));
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
