// SPDX-License-Identifier: MIT
// The recorder's own memory. It is a process of the job: SLURM's jobacct_gather adds its RSS (or
// PSS) to the tree's and holds the sum against the limit (docs/benchmarks-sampling.md, "The
// recorder's own memory", has the per-component breakdown these steps came from).
#pragma once

namespace loaderlens {

// One malloc arena for every thread. glibc gives each new thread that allocates its own arena
// (a 64 MiB reservation of which it touches 100-250 KiB, never given back while the thread
// lives); the recorder's threads allocate little and rarely at once, so sharing the main arena
// costs no measurable time and saves that much RSS per thread. Called before any thread starts.
// True when glibc took the setting.
bool limit_malloc_arenas();

// Unmaps the pages of read-only private file mappings (library and executable text, read-only
// data) that hold no copy-on-write page. They stay in the page cache; what the recorder touches
// again is faulted back from it, so RSS settles at the text it really runs. At start-up the
// dynamic loader and the constructors of every linked library (libcrypto, gnutls, krb5... pulled
// in by libhdf5's libcurl, which the record path never calls) leave ~6-8 MiB of text mapped that
// is never run again. Mappings with an anonymous page (RELRO data relocated then made read-only)
// are left alone: MADV_DONTNEED would throw the relocations away. Returns the KiB unmapped.
long drop_idle_file_pages();

// Gives the kernel back the free pages inside the heap, not only at its top (malloc_trim(0)):
// start-up frees much in the middle of it (SQLite's schema parse, the option parser's
// temporaries, the first /proc scans), which plain free() keeps resident.
void release_free_heap();

// Sets the kernel's peak RSS (VmHWM, which the recording's recorder_peak_rss_kb reports) to the
// RSS of now (clear_refs "5", Linux >= 4.0). Called once, right after the first
// drop_idle_file_pages() at the top of main(): the peak then measures the recorder from before
// it launched the command on, not the few milliseconds in which the dynamic loader ran the
// constructors of every library (~15 MiB, then ~7 MiB once dropped). True when the kernel took it.
bool reset_peak_rss();

} // namespace loaderlens
