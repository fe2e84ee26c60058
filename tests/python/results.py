"""One check per line and a closing "N passed, M failed" line, shared by the Python checks."""

import sys
import traceback


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, fn):
        """Runs `fn`; prints `ok   name[: detail]` or `FAIL name: error` and goes on either way."""
        try:
            detail = fn()
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3, file=sys.stdout)
            return
        self.passed += 1
        print(f"ok   {name}" + (f": {detail}" if detail else ""))

    def summary(self):
        """Prints the closing line; True when nothing failed."""
        print(f"{self.passed} passed, {self.failed} failed")
        return self.failed == 0
