// SPDX-License-Identifier: MIT
// The recorder's own memory. It is a process of the job: SLURM's jobacct_gather adds its RSS (or
// PSS) to the tree's and holds the sum against the limit (docs/benchmarks-sampling.md, "The
// recorder's own memory", has the per-component breakdown these steps came from).
// Header-only: core/CMakeLists.txt lists the layer's sources and is another writer's file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <malloc.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace loaderlens {

// One malloc arena for every thread. glibc gives each new thread that allocates its own arena
// (a 64 MiB reservation of which it touches 100-250 KiB, never given back while the thread
// lives); the recorder's threads allocate little and rarely at once, so sharing the main arena
// costs no measurable time and saves that much RSS per thread. Called before any thread starts.
// True when glibc took the setting.
inline bool limit_malloc_arenas() {
    return ::mallopt(M_ARENA_MAX, 1) == 1;
}

// Unmaps the pages of read-only private file mappings (library and executable text, read-only
// data) that hold no copy-on-write page. They stay in the page cache; what the recorder touches
// again is faulted back from it, so RSS settles at the text it really runs. At start-up the
// dynamic loader and the constructors of every linked library (libcrypto, gnutls, krb5... pulled
// in by libhdf5's libcurl, which the record path never calls) leave ~6-8 MiB of text mapped that
// is never run again. Mappings with an anonymous page (RELRO data relocated then made read-only)
// are left alone: MADV_DONTNEED would throw the relocations away. Returns the KiB unmapped.
inline long drop_idle_file_pages() {
    std::FILE* smaps = std::fopen("/proc/self/smaps", "re");
    if (!smaps) return 0;
    long dropped = 0;
    unsigned long start = 0, end = 0;
    bool candidate = false;
    long rss = 0;
    auto flush = [&] {
        if (candidate && rss > 0 &&
            ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED) == 0)
            dropped += rss;
        candidate = false;
    };
    char line[4096];
    while (std::fgets(line, sizeof line, smaps)) {
        char perms[5] = {};
        unsigned long offset = 0;
        int path_at = 0;
        unsigned long s = 0, e = 0;
        if (std::sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &s, &e, perms, &offset, &path_at) >=
                4 &&
            path_at > 0) {
            flush();
            start = s;
            end = e;
            rss = 0;
            // A file path (not [vdso], [heap], or an anonymous mapping), private, not writable.
            candidate = line[path_at] == '/' && perms[1] != 'w' && perms[3] == 'p';
            continue;
        }
        long kb = 0;
        if (std::sscanf(line, "Rss: %ld kB", &kb) == 1)
            rss = kb;
        else if (std::sscanf(line, "Anonymous: %ld kB", &kb) == 1 && kb != 0)
            candidate = false;
        else if (std::strncmp(line, "VmFlags:", 8) == 0 && std::strstr(line, " lo"))
            candidate = false; // mlocked: the user asked for it to stay
    }
    flush();
    std::fclose(smaps);
    return dropped;
}

// Gives the kernel back the free pages inside the heap, not only at its top (malloc_trim(0)):
// start-up frees much in the middle of it (SQLite's schema parse, the option parser's
// temporaries, the first /proc scans), which plain free() keeps resident.
inline void release_free_heap() {
    ::malloc_trim(0);
}

// Sets the kernel's peak RSS (VmHWM, which the recording's recorder_peak_rss_kb reports) to the
// RSS of now (clear_refs "5", Linux >= 4.0). Called once, right after the first
// drop_idle_file_pages() at the top of main(): the peak then measures the recorder from before
// it launched the command on, not the few milliseconds in which the dynamic loader ran the
// constructors of every library (~15 MiB, then ~7 MiB once dropped). True when the kernel took it.
inline bool reset_peak_rss() {
    std::FILE* clear_refs = std::fopen("/proc/self/clear_refs", "we");
    if (!clear_refs) return false;
    const bool written = std::fputs("5", clear_refs) >= 0;
    return std::fclose(clear_refs) == 0 && written;
}

} // namespace loaderlens
