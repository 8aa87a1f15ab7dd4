# syntax=docker/dockerfile:1
# Node 24, the line .nvmrc names and CI tests first, supported to April 2028 (docs/decisions.md,
# "Node.js versions").
# Build stage: compiles TypeScript, then drops the dev dependencies. better-sqlite3 13 ships
# prebuilt Node-API binaries for linux x64 and arm64 (glibc and musl), but npm still runs
# node-gyp over its binding.gyp, which finds the prebuilt one and compiles nothing: it needs
# python3 and make (and g++ on a platform without a prebuilt binary).
FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
# a local package of the lock file (the resource schematic, a dev dependency): npm ci links it
COPY schematics ./schematics
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and the build only, as the unprivileged node user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production DATABASE_URL=sqlite:/data/plant-store.sqlite
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:3000/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=8", "--no-allocation-site-pretenuring", "dist/main.js"]
