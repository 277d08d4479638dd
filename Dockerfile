# The outcomes service as a container image:
#
#   docker build -t outcomes .        (or: podman build -t outcomes .)
#   docker run -d -p 8080:8080 -v outcomes-data:/var/lib/outcomes outcomes
#
# Settings by environment (OUTCOMES_*, `outcomes serve --help`); the data
# (SQLite database, secrets key, plugin cache) in the one volume. How to run
# it in production: docs/operations.md#install.

# Build: the host in release and every plugin to wasm. The steps are
# deploy/build-dist.sh, which CI runs as well (`cargo xtask dist`), so they
# are tested where no container engine runs. rust-toolchain.toml makes
# rustup fetch the pinned toolchain and the wasm32 target.
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    deploy/build-dist.sh --profile release --out /dist

# Run: a slim Debian with curl for the health check, a non-root user, the
# assembled folder in /opt/outcomes.
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 outcomes \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/outcomes \
        --no-create-home --shell /usr/sbin/nologin outcomes \
    && install -d -o outcomes -g outcomes -m 0700 /var/lib/outcomes
COPY --from=build /dist /opt/outcomes
WORKDIR /opt/outcomes
ENV OUTCOMES_LISTEN=0.0.0.0:8080 \
    OUTCOMES_DATA_DIR=/var/lib/outcomes \
    OUTCOMES_LOG_FORMAT=json
VOLUME ["/var/lib/outcomes"]
EXPOSE 8080
# By number, so an orchestrator can check it is not root without the
# image's /etc/passwd.
USER 10001:10001
# /health now; switch to /readyz (OUTCOMES_HEALTHCHECK_PATH, see
# deploy/healthcheck.sh) where the service has it. The start period covers
# compiling the plugins on a first start with an empty cache.
HEALTHCHECK --interval=30s --timeout=6s --start-period=60s --retries=3 \
    CMD ["/opt/outcomes/bin/outcomes-healthcheck"]
ENTRYPOINT ["/opt/outcomes/bin/outcomes-entrypoint"]
