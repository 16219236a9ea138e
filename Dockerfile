# syntax=docker/dockerfile:1.7
# goldwatch service image (the Helm chart's default: ghcr.io/goldwatch/goldwatch:<appVersion>).
#
#   docker build -t ghcr.io/goldwatch/goldwatch:0.1.0 .
#   docker run --rm -p 8000:8000 --read-only --tmpfs /tmp -v goldwatch-state:/var/lib/goldwatch \
#       -v $PWD/goldwatch.yaml:/etc/goldwatch/goldwatch.yaml:ro ghcr.io/goldwatch/goldwatch:0.1.0
#
# Stage 1 builds the goldwatch wheel and installs it with its dependencies into /opt/venv;
# stage 2 copies only that venv onto a clean python:3.11-slim, runs as uid 10001 and writes
# nothing outside /var/lib/goldwatch (state) and /tmp, so a read-only root filesystem works.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY service ./service
COPY consumers ./consumers
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --upgrade pip wheel \
 && /opt/venv/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/pip install -c requirements.lock /wheels/goldwatch-*.whl \
 && /opt/venv/bin/goldwatch --help >/dev/null

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="goldwatch" \
      org.opencontainers.image.description="Watch a RAG system's live traffic against its gold set" \
      org.opencontainers.image.source="https://github.com/goldwatch/goldwatch" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 goldwatch \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/goldwatch \
        --no-create-home --shell /usr/sbin/nologin goldwatch \
 && mkdir -p /var/lib/goldwatch /etc/goldwatch \
 && chown 10001:10001 /var/lib/goldwatch
COPY --from=builder /opt/venv /opt/venv
# A default configuration: HTTP ingest only, state on the volume. Mount your own over it
# (the Helm chart mounts its ConfigMap here).
COPY <<GOLDWATCH_YAML /etc/goldwatch/goldwatch.yaml
source:
  kind: none
state:
  path: /var/lib/goldwatch/state.sqlite
api:
  host: 0.0.0.0
  port: 8000
GOLDWATCH_YAML
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/var/lib/goldwatch
USER 10001:10001
WORKDIR /var/lib/goldwatch
VOLUME ["/var/lib/goldwatch"]
EXPOSE 8000
CMD ["goldwatch", "serve", "--config", "/etc/goldwatch/goldwatch.yaml"]
