"""The `ktune` command that `pip install` puts on PATH: runs the ktune program installed in the
package (the same one ktune.tune drives), with the arguments and exit status unchanged."""

import os
import sys


def main():
    from ._tune import find_cli

    try:
        cli = find_cli()
    except Exception as e:  # KtuneError: no program found
        print("ktune: %s" % e, file=sys.stderr)
        return 1
    # find_cli() falls back to `ktune` on PATH, which may be this very script: never exec itself.
    me = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.realpath(cli) == me:
        print("ktune: the ktune program is not installed beside the package (set KTUNE_CLI)", file=sys.stderr)
        return 1
    os.execv(cli, [cli] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
