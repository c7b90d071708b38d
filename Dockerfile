# remit's images, from one file (README "Install"):
#   docker build -t remit .                                   the service: consumer, relay, archiver, admin, CLI, core bank
#   docker build --target reconcile -t remit-reconcile .      the same plus Java 17 and the `spark` extra
# Both run as the unprivileged user remit (uid 10001). Debian 12 (bookworm): it has openjdk-17.

FROM python:3.11-slim-bookworm AS base
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/remit/bin:$PATH
RUN groupadd --system --gid 10001 remit \
 && useradd --system --uid 10001 --gid remit --home-dir /srv/remit --create-home --shell /usr/sbin/nologin remit

# Build: the wheel's sources only (setup.py lists the packages; alembic/ goes inside the wheel).
FROM base AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY app app
COPY alembic alembic
COPY contracts contracts
COPY corebank corebank
COPY reconciliation reconciliation
RUN python -m venv /opt/remit && pip install .

FROM build AS build-spark
RUN pip install ".[spark]"

# Reconciliation: `docker run --rm remit-reconcile --as-of ... --out /var/lib/remit/recon/...`.
# It reads PostgreSQL with COPY (reconciliation/export.py), not JDBC: no PostgreSQL JDBC driver needed.
FROM base AS reconcile
# Slim images drop the man directories that openjdk's post-install script links into.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o remit -g remit /var/lib/remit/recon
COPY --from=build-spark /opt/remit /opt/remit
WORKDIR /srv/remit
USER 10001:10001
ENTRYPOINT ["remit", "reconcile"]
CMD ["--help"]

# The service (the default target, last): `docker run remit` is the consumer on :8000; compose runs the
# other processes (relay, archiver, admin, migrate, core bank) from the same image with their own command.
FROM base AS service
COPY --from=build /opt/remit /opt/remit
WORKDIR /srv/remit
USER 10001:10001
EXPOSE 8000
# The consumer's liveness; compose states the check of each other process.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["faststream", "run", "app.main:app", "--host", "0.0.0.0", "--port", "8000"]
