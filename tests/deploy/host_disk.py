"""Watermarks for the deploy tests' local clusters.

stratad's default watermarks (5% and 10% free) are about the host's disk: on
a CI machine whose disk is 90% used, every node counts as full and an ingest
with --replication 2 finds no second holder. These tests are not about
watermarks, so their nodes get ones the host always meets (as the C++ tests'
nodes do: tests/support/process.cc); cluster.sh passes what follows `--` to
every stratad."""

HOST_DISK_NOT_FULL = ["--", "--disk-low-watermark", "1MiB", "--disk-high-watermark", "2MiB"]
