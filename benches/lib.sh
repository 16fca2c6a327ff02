# What the side-by-side scripts share; sourced after they set `root` (the repository).

# Exits with a message naming the first of the commands given that is not installed.
needs() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
  done
}

# Sets `pkgmon` to $PKGMON when given (a pkgmon already built), else builds the release one,
# and `pkgprof` to $PKGPROF, else the pkgprof beside that pkgmon (built with it).
find_pkgmon() {
  if [ -n "${PKGMON:-}" ]; then
    pkgmon="$(realpath "$PKGMON")"
  else
    cargo build -q --release -p pkgprof-cli --bin pkgmon --bin pkgprof --manifest-path "$root/Cargo.toml"
    pkgmon="$root/target/release/pkgmon"
  fi
  pkgprof="$(realpath "${PKGPROF:-$(dirname "$pkgmon")/pkgprof}")"
}

# Sets `work` to the scratch directory $1 (made if missing, kept), or to a new temporary one
# removed when the script exits.
scratch_dir() {
  if [ -n "${1:-}" ]; then
    work="$1"
    mkdir -p "$work"
  else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
  fi
}
