# syntax=docker/dockerfile:1
# sluice in a container: `sluice schedule` runs the jobs of /etc/sluice/jobs.yaml on their cron.
#   docker build -t sluice .
#   docker run --rm -v "$PWD/jobs.yaml:/etc/sluice/jobs.yaml:ro" -e SERVICE_API_KEY sluice
# The image runs the compiled JavaScript (`npm run build`, dist/), as the published package does:
# Node 24 could run the TypeScript sources, but type stripping costs every process and every
# thread it starts some 15-20 MB and start-up time.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The full install first (the lock file is the truth): the compiler is a dev dependency.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY connectors ./connectors
COPY config ./config
# Compile, then the dev dependencies go: the image's own node is 24, so the `node` dev dependency
# that pins 24 on older machines is not needed.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-slim
# Two start-up settings for memory (measured by `npm run bench -- parallel`, "image's env"):
# - V8 sizes the main thread's young generation for throughput (up to 64 MB per semi-space);
#   capped at 8 MB, a one-thread export over JSON peaks some 20-30 MB lower.
# - glibc's malloc raises its mmap threshold (up to 32 MB) once a big buffer is freed, so later
#   page-sized buffers (page bodies and texts, Arrow columns) come from its heap, which stays at
#   its high-water mark after they are freed: 50-70 MB of a one-thread export's peak. Fixed at its
#   default, 128 KiB, such buffers are mapped, and unmapped when freed.
# Both only work at start-up, hence here. They cost time: such an export took 2-18% longer.
# The health server binds loopback unless told otherwise; in a container it must take every
# interface, for a published port and an orchestrator's probes.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=8 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    SLUICE_HEALTH_PORT=9464 \
    SLUICE_HEALTH_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
# bin/sluice.js runs dist/ when there is no src/ beside it.
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
COPY --from=build /app/config ./config
COPY config/docker/jobs.yaml /etc/sluice/jobs.yaml
# `sluice` on PATH, as `npm install -g` would link it (package.json "bin").
RUN chmod 0755 /app/bin/sluice.js \
 && ln -s /app/bin/sluice.js /usr/local/bin/sluice \
 && mkdir -p /data \
 && chown node:node /data
# The unprivileged user of the node image (uid 1000). Outputs, run state and the embedded
# service's data go under /data (mount a volume there to keep them).
USER node
WORKDIR /data
EXPOSE 9464
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.SLUICE_HEALTH_PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["sluice"]
CMD ["schedule", "/etc/sluice/jobs.yaml"]
