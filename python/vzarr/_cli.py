"""The `vzarr` command installed with the wheel: the same command line as `cargo install vzarr`."""

import sys

from . import _vzarr


def main() -> None:
    """Runs `vzarr` with this process's arguments and exits with its code."""
    sys.exit(_vzarr.run_cli(["vzarr", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
