"""Object-store settings: the standard environment variables overridden by ``storage_options``
with the same names (case-insensitive), and varlake's own ``varlake.*`` options; see
``io.object_store`` for the list. Remembers which values are secrets, so that no message shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from varlake.errors import UnsupportedStorageError

__all__ = ["SINGLE_WRITER", "StoreSettings"]

SINGLE_WRITER = "varlake.single_writer"

# Setting name -> (where it goes, obstore's key, is it a secret). "config" keys go to the store's
# config, "client" keys to its HTTP client options.
_S3_KEYS: dict[str, tuple[str, str, bool]] = {
    "aws_access_key_id": ("config", "access_key_id", False),
    "aws_secret_access_key": ("config", "secret_access_key", True),
    "aws_session_token": ("config", "session_token", True),
    "aws_default_region": ("config", "region", False),
    "aws_region": ("config", "region", False),
    "aws_endpoint": ("config", "endpoint", False),
    "aws_endpoint_url": ("config", "endpoint", False),
    "aws_endpoint_url_s3": ("config", "endpoint", False),
    "aws_virtual_hosted_style_request": ("config", "virtual_hosted_style_request", False),
    "aws_skip_signature": ("config", "skip_signature", False),
    "aws_request_payer": ("config", "request_payer", False),
    "aws_allow_http": ("client", "allow_http", False),
}
_GCS_KEYS: dict[str, tuple[str, str, bool]] = {
    "google_service_account": ("config", "service_account", False),
    "google_service_account_path": ("config", "service_account", False),
    "google_service_account_key": ("config", "service_account_key", True),
    "google_application_credentials": ("config", "application_credentials", False),
    "google_skip_signature": ("config", "skip_signature", False),
    "google_base_url": ("config", "base_url", False),
    "google_allow_http": ("client", "allow_http", False),
}
_AZURE_KEYS: dict[str, tuple[str, str, bool]] = {
    "azure_storage_account_name": ("config", "account_name", False),
    "azure_storage_account_key": ("config", "account_key", True),
    "azure_storage_access_key": ("config", "account_key", True),
    "azure_storage_sas_key": ("config", "sas_key", True),
    "azure_storage_sas_token": ("config", "sas_key", True),
    "azure_storage_token": ("config", "token", True),
    "azure_storage_client_id": ("config", "client_id", False),
    "azure_client_id": ("config", "client_id", False),
    "azure_storage_client_secret": ("config", "client_secret", True),
    "azure_client_secret": ("config", "client_secret", True),
    "azure_storage_tenant_id": ("config", "tenant_id", False),
    "azure_tenant_id": ("config", "tenant_id", False),
    "azure_storage_endpoint": ("config", "endpoint", False),
    "azure_storage_use_emulator": ("config", "use_emulator", False),
    "azure_use_azure_cli": ("config", "use_azure_cli", False),
    "azure_skip_signature": ("config", "skip_signature", False),
    "azure_allow_http": ("client", "allow_http", False),
}
_KEYS = {"s3": _S3_KEYS, "gs": _GCS_KEYS, "az": _AZURE_KEYS}
_BOOL_KEYS = {"allow_http", "virtual_hosted_style_request", "skip_signature", "use_emulator", "use_azure_cli"}
_VARLAKE_KEYS = {
    SINGLE_WRITER,
    "varlake.retry_timeout",
    "varlake.max_retries",
    "varlake.connect_timeout",
    "varlake.timeout",
}


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _seconds(name: str, value: object) -> float:
    try:
        out = float(str(value))
    except ValueError:
        raise UnsupportedStorageError(f"storage option {name} must be a number of seconds, not {value!r}") from None
    if out <= 0:
        raise UnsupportedStorageError(f"storage option {name} must be positive, not {value!r}")
    return out


class StoreSettings:
    """Store settings from the environment overridden by ``storage_options``; remembers which
    values are secrets so that no message ever shows them."""

    def __init__(self, scheme: str, storage_options: Mapping[str, Any] | None, env: Mapping[str, str]) -> None:
        table = _KEYS.get(scheme, {})
        self.config: dict[str, Any] = {}
        self.client: dict[str, Any] = {}
        self.secrets: list[str] = []
        self.varlake: dict[str, str] = {}
        # The environment first (only the names this store knows), then the options on top.
        layers: list[dict[str, Any]] = [{k.lower(): v for k, v in env.items() if k.lower() in table}]
        options = {str(k).lower(): v for k, v in (storage_options or {}).items()}
        layers.append(options)
        for layer in layers:
            # aws_region beats aws_default_region in one layer, whatever the order of the keys.
            for key in sorted(layer, key=lambda k: k != "aws_default_region"):
                value = layer[key]
                if key.startswith("varlake."):
                    if key not in _VARLAKE_KEYS:
                        raise UnsupportedStorageError(
                            f"unknown storage option {key!r}; varlake's own are {sorted(_VARLAKE_KEYS)}"
                        )
                    self.varlake[key] = str(value)
                    continue
                if key not in table:
                    raise UnsupportedStorageError(
                        f"storage option {key!r} does not apply to {scheme}:// stores; known: {sorted(table)}"
                    )
                where, name, secret = table[key]
                if name in _BOOL_KEYS:
                    value = _truthy(value)
                elif value is not None:
                    value = str(value)
                if secret and value:
                    self.secrets.append(str(value))
                (self.config if where == "config" else self.client)[name] = value
        self.single_writer = _truthy(self.varlake.get(SINGLE_WRITER, "false"))
        self.retry_timeout = _seconds("varlake.retry_timeout", self.varlake.get("varlake.retry_timeout", 60))
        self.connect_timeout = _seconds("varlake.connect_timeout", self.varlake.get("varlake.connect_timeout", 5))
        self.timeout = _seconds("varlake.timeout", self.varlake.get("varlake.timeout", 60))
        try:
            self.max_retries = int(self.varlake.get("varlake.max_retries", 10))
        except ValueError:
            raise UnsupportedStorageError("storage option varlake.max_retries must be a whole number") from None

    def retry_config(self, max_retries: int | None = None) -> dict[str, Any]:
        budget = timedelta(seconds=self.retry_timeout)
        return {
            "max_retries": self.max_retries if max_retries is None else max_retries,
            "retry_timeout": budget,
            "backoff": {
                "init_backoff": timedelta(milliseconds=100),
                "max_backoff": timedelta(seconds=min(15.0, max(0.2, self.retry_timeout / 4))),
                "base": 2,
            },
        }

    def client_options(self) -> dict[str, Any]:
        out = dict(self.client)
        out["connect_timeout"] = timedelta(seconds=self.connect_timeout)
        out["timeout"] = timedelta(seconds=self.timeout)
        return out

    def s3a_properties(self) -> dict[str, str]:
        """The Hadoop S3A properties (``fs.s3a.*``) that reach the same S3 store with the same
        settings, for Spark's driver and executors (prefix them with ``spark.hadoop.``); ``s3://``
        is mapped to S3A too. Holds the credentials when they were given: keep it out of logs."""
        props = {
            "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        }
        endpoint = self.config.get("endpoint")
        if endpoint:
            props["fs.s3a.endpoint"] = str(endpoint)
            props["fs.s3a.connection.ssl.enabled"] = "false" if str(endpoint).startswith("http://") else "true"
            # S3-compatible servers answer path-style requests (http://host/bucket/key).
            props["fs.s3a.path.style.access"] = "false" if self.config.get("virtual_hosted_style_request") else "true"
        if self.config.get("region"):
            props["fs.s3a.endpoint.region"] = str(self.config["region"])
        if self.config.get("access_key_id") and self.config.get("secret_access_key"):
            props["fs.s3a.access.key"] = str(self.config["access_key_id"])
            props["fs.s3a.secret.key"] = str(self.config["secret_access_key"])
            if self.config.get("session_token"):
                props["fs.s3a.session.token"] = str(self.config["session_token"])
                props["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            else:
                props["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        elif self.config.get("skip_signature"):
            props["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
        props["fs.s3a.retry.limit"] = str(self.max_retries)
        props["fs.s3a.connection.establish.timeout"] = f"{int(self.connect_timeout * 1000)}"
        return props
