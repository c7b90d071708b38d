FROM python:3.11-slim
WORKDIR /srv/remit
COPY pyproject.toml README.md alembic.ini ./
COPY contracts contracts
COPY app app
COPY alembic alembic
COPY reconciliation reconciliation
COPY examples examples
RUN pip install --no-cache-dir .
ENV PYTHONUNBUFFERED=1
CMD ["faststream", "run", "app.main:app"]
