"""Type stubs of `vzarr._vzarr`, the Rust extension module (python/src). The Python API
(`vzarr.scan`, `vzarr.open`, `vzarr.virtualizarr`, ...) is built on these."""

from collections.abc import Mapping
from typing import Any, final

__all__ = [
    "AlreadyExists",
    "Array",
    "Error",
    "NotAuthorized",
    "NotFound",
    "ScanError",
    "SelectionError",
    "SourceChanged",
    "Store",
    "__version__",
    "append",
    "compact",
    "expand_inputs",
    "export",
    "materialize",
    "merge",
    "parse_archive",
    "parse_file",
    "run_cli",
    "scan",
    "scan_shard",
    "write_sidecars",
]

__version__: str

class Error(Exception):
    """Every error vzarr raises."""

class NotFound(Error):
    """No store, file or array at the location given."""

class NotAuthorized(Error):
    """A source lies outside the authorized containers."""

class SourceChanged(Error):
    """A source file changed since it was scanned."""

class SelectionError(Error):
    """A selection that does not fit the array."""

class ScanError(Error):
    """A file that cannot be scanned, or inputs that do not combine."""

class AlreadyExists(Error):
    """The output exists and overwriting was not asked for."""

def scan(
    inputs: list[str],
    concat: list[str],
    output: str,
    format: str,
    overwrite: bool,
    skip_unsupported: bool,
    take_first: list[str],
    drop_missing: bool,
    storage_options: Mapping[str, Any] | None = None,
    branch: str | None = None,
    message: str | None = None,
    trust_sources: bool = True,
    progress: bool = False,
    sidecars: str | None = None,
    inline_threshold: int | None = None,
) -> dict[str, Any]: ...
def write_sidecars(
    inputs: list[str],
    output: str,
    overwrite: bool,
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None = None,
    trust_sources: bool = True,
) -> dict[str, Any]: ...
def compact(
    store: str,
    dim: str,
    target: int | str,
    tail: bool = False,
    dry_run: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    branch: str | None = None,
    message: str | None = None,
) -> dict[str, Any]: ...
def export(
    store: str,
    output: str,
    format: str = "kerchunk-json",
    url_prefix: list[str] = ...,
    record_size: int | None = None,
    skip_unsupported: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    inline_threshold: int | None = None,
) -> dict[str, Any]: ...
def materialize(
    store: str,
    output: str,
    chunks: list[tuple[str, str]],
    max_memory: int | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    shards: list[tuple[str, str]] | None = None,
    format: str = "zarr",
    update: bool = False,
    branch: str | None = None,
    message: str | None = None,
    codec: str | None = None,
) -> dict[str, Any]: ...
def merge(
    parts: list[str],
    concat: list[str],
    output: str,
    format: str,
    overwrite: bool,
    take_first: list[str],
    drop_missing: bool,
    storage_options: Mapping[str, Any] | None = None,
    branch: str | None = None,
    message: str | None = None,
    trust_sources: bool = True,
    inline_threshold: int | None = None,
) -> dict[str, Any]: ...
def append(
    store: str,
    inputs: list[str],
    allow_gaps: bool,
    storage_options: Mapping[str, Any] | None = None,
    branch: str | None = None,
    message: str | None = None,
    trust_sources: bool = True,
    chunks: tuple[str, str] | None = None,
) -> dict[str, Any]: ...
def expand_inputs(
    inputs: list[str], concat: list[str], storage_options: Mapping[str, Any] | None = None
) -> list[str]: ...
def scan_shard(
    inputs: list[str],
    concat: list[str],
    part: str,
    index: int,
    count: int,
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None = None,
    sidecars: str | None = None,
    expanded: bool = False,
) -> dict[str, Any]: ...
def run_cli(argv: list[str]) -> int: ...
def parse_file(
    url: str,
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None = None,
    hdf5_links: bool = False,
) -> dict[str, Any]: ...
def parse_archive(
    inputs: list[str],
    concat: list[str],
    skip_unsupported: bool,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]: ...
@final
class Store:
    """An opened native store or Icechunk repository."""

    @staticmethod
    def open(
        location: str,
        allow_sources: list[str],
        storage_options: Mapping[str, Any] | None = None,
        check_sources: bool = True,
        branch: str | None = None,
    ) -> Store: ...
    @property
    def location(self) -> str: ...
    @property
    def trusted(self) -> list[str]: ...
    def info_json(self) -> str: ...
    def array_paths(self) -> list[str]: ...
    def group_paths(self) -> list[str]: ...
    def node_metadata(self, path: str) -> bytes: ...
    def array(self, path: str) -> Array: ...

@final
class Array:
    """One array of an opened store."""

    @property
    def path(self) -> str: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def dims(self) -> list[str] | None: ...
    def metadata_json(self) -> str: ...
    @property
    def chunks(self) -> list[list[int]]: ...
    def read_into(self, selection: list[Any], out: bytearray) -> None: ...
    def read_strings(self, selection: list[Any]) -> list[str]: ...
    def read_bytes(self, selection: list[Any]) -> bytes: ...
    def chunk_bytes(self, coords: list[int]) -> bytes | None: ...
