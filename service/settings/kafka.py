"""The ``kafka`` section of the settings: the Kafka source's configuration, plain frozen
pydantic data.

A leaf module (pydantic only), so :mod:`service.settings` can nest it, and the Kafka
adapters (``consumers/``) can read it, without the settings importing kafka-python or any
source implementation.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


class KafkaSourceConfig(BaseModel):
    """Frozen Kafka source settings; times in ms unless the name ends in ``_s`` (seconds).

    ``dlq_topic`` defaults to ``<topic>.dlq``. Security settings are passed through to
    kafka-python: ``security_protocol``, SASL (``PLAIN``, ``SCRAM-SHA-256``,
    ``SCRAM-SHA-512``) with ``sasl_username`` and a password, TLS with ``ssl_cafile``,
    ``ssl_certfile``, ``ssl_keyfile`` (+ ``ssl_password`` for an encrypted key),
    ``ssl_crlfile`` and ``ssl_check_hostname``. Secrets come from the environment
    (``GOLDWATCH_KAFKA__SASL_PASSWORD``, ``GOLDWATCH_KAFKA__SSL_PASSWORD``) or from files
    (``sasl_password_file``, ``ssl_password_file``: a mounted Secret, read when the client is
    built, one trailing newline stripped); they are ``SecretStr`` or paths and never logged
    or printed.

    :raises pydantic.ValidationError: inconsistent timeouts or incomplete SASL settings.

    Attributes:
        bootstrap_servers: ``host:port`` of one or more brokers (a string or a list).
        topic: the query-log topic to consume.
        consumer_group: the consumer group; replicas of one deployment share it and split the
            topic's partitions (replicas beyond the partition count stay idle).
        client_id: the Kafka client id (broker logs, quotas).
        auto_offset_reset: where a group without committed offsets starts: ``earliest``
            (the whole retained log) or ``latest`` (new events only).
        max_poll_records: most records one poll returns (the micro-batch's upper bound).
        session_timeout_ms: the broker drops a member silent this long (ms) and rebalances.
        heartbeat_interval_ms: member heartbeat period (ms), below ``session_timeout_ms``.
        max_poll_interval_ms: longest gap between polls (ms) before the member is dropped.
        request_timeout_ms: timeout of one broker request (ms).
        dlq_topic: dead-letter topic (default ``<topic>.dlq``): each unusable event as a JSON
            body (reason, detail, origin, base64 bytes), with the reason, topic, partition
            and offset also in the headers ``goldwatch.dlq.*``.
        commit_interval_s: seconds between offset commits (after a state checkpoint); 0
            commits after every batch.
        revoke_checkpoint_timeout_ms: longest wait (ms) at a rebalance for the checkpoint of
            what was processed on the revoked partitions before their offsets are committed;
            at most half of ``max_poll_interval_ms`` (the group's rebalance timeout). Unset:
            half of it, at most 60 s. On timeout the last checkpoint's offsets are committed
            and the next owner replays the rest (at least once).
        lag_interval_s: seconds between consumer-lag measurements (``goldwatch_consumer_lag``).
        probe_interval_s: seconds between broker reachability probes (``/readyz``).
        probe_timeout_ms: timeout of one probe (ms).
        ready_stale_after_s: ``/readyz`` fails when the last successful poll or probe is
            older than this (seconds).
        security_protocol: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``.
        sasl_mechanism: ``PLAIN``, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` (with SASL).
        sasl_username: SASL user name.
        sasl_password: SASL password (secret: set it with ``GOLDWATCH_KAFKA__SASL_PASSWORD``
            or use ``sasl_password_file``; never logged, masked by ``config check``).
        ssl_cafile: CA bundle (PEM) that signed the brokers' certificates.
        ssl_certfile: client certificate (PEM) for mutual TLS.
        ssl_keyfile: client private key (PEM) for mutual TLS.
        ssl_password: password of an encrypted ``ssl_keyfile`` (secret, like
            ``sasl_password``; ``GOLDWATCH_KAFKA__SSL_PASSWORD``).
        ssl_crlfile: certificate revocation list (PEM) checked against the brokers.
        ssl_check_hostname: check that the broker certificate matches its host name.
        sasl_password_file: read the SASL password from this file (a mounted Secret).
        ssl_password_file: read the key password from this file (a mounted Secret).
        max_event_time_skew_s: align the assigned partitions in event time: a partition whose
            events are more than this many seconds (event time) ahead of the slowest
            partition that still has records to read is held back (its records buffered,
            the partition paused) until the others caught up, so a backlog of several
            partitions (a first start on a retained topic, catching up after an outage) is
            processed as if in time order and the drift windows and baseline see it as a
            replay in time order would. A partition with nothing left to read (empty,
            quiet, caught up) holds no one back once a read of its end offset after the
            others' records were fetched shows it (at most every 0.05 s, only while it keeps
            a record back), nor one that gives nothing for 5 s. Costs
            one more decode of each event while on (the event time is in the value; the
            Kafka record timestamp is the send time). Unset: half of
            ``analytics.drift.allowed_lateness_s`` (``bucket_s`` when that is 0) with
            analytics on, off without; 0: off (records are handed out as fetched).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str | list[str]
    topic: str = Field(min_length=1)
    consumer_group: str = Field(min_length=1)
    client_id: str = "goldwatch"
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    max_poll_records: int = Field(500, ge=1)
    session_timeout_ms: int = Field(45_000, gt=0)
    heartbeat_interval_ms: int = Field(3_000, gt=0)
    max_poll_interval_ms: int = Field(300_000, gt=0)
    request_timeout_ms: int = Field(30_000, gt=0)
    dlq_topic: str = ""
    commit_interval_s: float = Field(5.0, ge=0)
    revoke_checkpoint_timeout_ms: int | None = Field(None, gt=0)
    lag_interval_s: float = Field(5.0, ge=0)
    probe_interval_s: float = Field(2.0, gt=0)
    probe_timeout_ms: int = Field(1_000, gt=0)
    ready_stale_after_s: float = Field(10.0, gt=0)
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: SecretStr | None = None
    ssl_crlfile: str | None = None
    ssl_check_hostname: bool = True
    sasl_password_file: str | None = None
    ssl_password_file: str | None = None
    max_event_time_skew_s: float | None = Field(None, ge=0, allow_inf_nan=False)

    @field_validator(
        "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_crlfile", "sasl_password_file",
        "ssl_password_file",
    )  # fmt: skip
    @classmethod
    def _path_not_empty(cls, value: str | None) -> str | None:
        # an empty variable (GOLDWATCH_KAFKA__SASL_PASSWORD_FILE=) would be read as "."
        if value is not None and not value.strip():
            raise ValueError("must not be empty (unset it instead)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _default_dlq(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("dlq_topic") and data.get("topic"):
            data = {**data, "dlq_topic": f"{data['topic']}.dlq"}
        return data

    @model_validator(mode="after")
    def _check(self) -> KafkaSourceConfig:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be < session_timeout_ms")
        if (
            self.revoke_checkpoint_timeout_ms is not None
            and self.revoke_checkpoint_timeout_ms > self.max_poll_interval_ms // 2
        ):
            raise ValueError(
                "revoke_checkpoint_timeout_ms must be <= max_poll_interval_ms / 2 (the group's "
                "rebalance timeout)"
            )
        if self.sasl_password and self.sasl_password_file:
            raise ValueError("give sasl_password or sasl_password_file, not both")
        if self.ssl_password and self.ssl_password_file:
            raise ValueError("give ssl_password or ssl_password_file, not both")
        if self.security_protocol.startswith("SASL") and not (
            self.sasl_mechanism
            and self.sasl_username
            and (self.sasl_password or self.sasl_password_file)
        ):
            raise ValueError(
                "SASL needs sasl_mechanism, sasl_username and sasl_password (or sasl_password_file)"
            )
        return self

    def revoke_timeout_ms(self) -> int:
        """The revoke checkpoint's timeout (ms): ``revoke_checkpoint_timeout_ms``, or half of
        ``max_poll_interval_ms`` capped at 60,000 (at least 1)."""
        if self.revoke_checkpoint_timeout_ms is not None:
            return self.revoke_checkpoint_timeout_ms
        return max(1, min(60_000, self.max_poll_interval_ms // 2))

    @staticmethod
    def _secret(value: SecretStr | None, path: str | None, name: str) -> str | None:
        """The secret from the setting or its file (one trailing newline stripped).

        :raises ValueError: the file cannot be read (the message names the file only).
        """
        if value is not None:
            return value.get_secret_value()
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read().removesuffix("\n").removesuffix("\r")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {name} from {path}: {type(exc).__name__}") from None

    def client_kwargs(self) -> dict[str, Any]:
        """Connection and security kwargs shared by the consumer and the DLQ producer."""
        kwargs: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "client_id": self.client_id,
            "request_timeout_ms": self.request_timeout_ms,
            "security_protocol": self.security_protocol,
        }
        optional = {
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_plain_username": self.sasl_username,
            "sasl_plain_password": self._secret(
                self.sasl_password, self.sasl_password_file, "sasl_password_file"
            ),
            "ssl_cafile": self.ssl_cafile,
            "ssl_certfile": self.ssl_certfile,
            "ssl_keyfile": self.ssl_keyfile,
            "ssl_password": self._secret(
                self.ssl_password, self.ssl_password_file, "ssl_password_file"
            ),
            "ssl_crlfile": self.ssl_crlfile,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if self.security_protocol in ("SSL", "SASL_SSL"):
            kwargs["ssl_check_hostname"] = self.ssl_check_hostname
        return kwargs

    def consumer_kwargs(self) -> dict[str, Any]:
        """All ``KafkaConsumer`` kwargs (auto commit off)."""
        return {
            **self.client_kwargs(),
            "group_id": self.consumer_group,
            "enable_auto_commit": False,
            "auto_offset_reset": self.auto_offset_reset,
            "max_poll_records": self.max_poll_records,
            "session_timeout_ms": self.session_timeout_ms,
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "max_poll_interval_ms": self.max_poll_interval_ms,
        }
