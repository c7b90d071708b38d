#!/usr/bin/env bash
# Make sure PostgreSQL and RabbitMQ (with its management API) answer on 127.0.0.1.
# Starts the local Debian servers when they are installed; otherwise says, in one line, how to get them.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() { # name, check command, seconds
  for _ in $(seq "$3"); do eval "$2" && return 0; sleep 1; done
  return 1
}
missing() {
  echo "remit: $1 is not running on 127.0.0.1 and no local server is installed: start one, or run \`docker compose up -d\`." >&2
  exit 1
}

if ! port_open 5432; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL ..."
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
    wait_for PostgreSQL "port_open 5432" 30 || missing PostgreSQL
  else
    missing PostgreSQL
  fi
fi

if ! port_open 5672; then
  if command -v rabbitmq-server >/dev/null; then
    echo "starting RabbitMQ ..."
    (ulimit -n 65536 2>/dev/null || true; rabbitmq-server -detached)
    wait_for RabbitMQ "port_open 5672" 90 || missing RabbitMQ
  else
    missing RabbitMQ
  fi
fi

mgmt_ok() { curl -fsS -u guest:guest http://127.0.0.1:15672/api/overview >/dev/null 2>&1; }
if ! mgmt_ok; then
  if command -v rabbitmq-plugins >/dev/null; then
    rabbitmq-plugins enable rabbitmq_management >/dev/null
    wait_for "RabbitMQ management" mgmt_ok 60 || missing "the RabbitMQ management API (port 15672)"
  else
    missing "the RabbitMQ management API (port 15672)"
  fi
fi

# The broker's own limits (scripts/rabbitmq-remit.conf). A local broker gets them at run time: they hold for
# channels opened from then on (observed on 3.10), so start long-lived publishers after this; a broker
# restarted without this script forgets them. Needs rabbitmqctl (root or the rabbitmq user).
max_message_size="$(sed -n 's/^max_message_size *= *//p' "$(dirname "$0")/rabbitmq-remit.conf")"
if command -v rabbitmqctl >/dev/null && rabbitmqctl -q status >/dev/null 2>&1; then
  rabbitmqctl -q eval "application:set_env(rabbit, max_message_size, ${max_message_size})." >/dev/null
else
  echo "remit: could not set RabbitMQ's max_message_size to ${max_message_size} (no local rabbitmqctl); set it in rabbitmq.conf." >&2
fi
