// SPDX-License-Identifier: MIT
// `loaderlens record` runs as loaderlens-record (record_main.cpp), a binary that links only what
// recording calls. The recorder is a process of the job: SLURM adds its RSS (or PSS) to the
// tree's. `loaderlens` links libhdf5 (and through its libcurl some 30 more libraries: libcrypto,
// gnutls, krb5, ldap...), LMDB and toml++ for its other commands; the dynamic loader relocates
// each of them and runs their constructors, leaving copy-on-write pages that stay resident for
// the whole recording (docs/benchmarks-sampling.md, "The recorder's own memory").
//
// `loaderlens` parses the command line itself, so help, errors and exit codes stay its own, and
// then execs loaderlens-record with the same arguments: same PID, same environment, same
// descriptors, and the signal dispositions loaderlens was started with.
#pragma once

namespace loaderlens::cli {

// Notes how SIGPIPE and SIGCHLD were disposed when loaderlens started: call before changing them.
void remember_dispositions_before_exec();

// Where loaderlens-record is for this loaderlens: LIBEXECDIR/loaderlens/ of an installed one
// (found from BINDIR as installed: ../libexec/loaderlens/), else beside it (the build tree).
// Null when there is none.
// Only what is beside this very binary: a copy of loaderlens alone records in its own process.
const char* lean_recorder_path();

// Execs loaderlens-record with `argv`. Returns only when there is none or the exec failed (the
// caller then records in its own process, as before), with loaderlens's dispositions back.
void exec_lean_recorder(char** argv);

} // namespace loaderlens::cli
