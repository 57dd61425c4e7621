//! tilekit benchmark drivers; the binaries are in `src/bin/`.
