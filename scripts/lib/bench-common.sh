# Shared by the benchmark scripts (source it from the repository root).

# SGTUNE: the sgtune binary to measure. SGTUNE_BIN names one (the tests pass their own);
# else a release build is made.
if [ -n "${SGTUNE_BIN:-}" ]; then
  SGTUNE=$SGTUNE_BIN
else
  cargo build --release --quiet
  SGTUNE=target/release/sgtune
fi

# A TCP port free on 127.0.0.1 right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
