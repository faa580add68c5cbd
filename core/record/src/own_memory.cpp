// SPDX-License-Identifier: MIT
#include "loaderlens/own_memory.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <malloc.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace loaderlens {

bool limit_malloc_arenas() {
    return ::mallopt(M_ARENA_MAX, 1) == 1;
}

long drop_idle_file_pages() {
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

void release_free_heap() {
    ::malloc_trim(0);
}

bool reset_peak_rss() {
    std::FILE* clear_refs = std::fopen("/proc/self/clear_refs", "we");
    if (!clear_refs) return false;
    const bool written = std::fputs("5", clear_refs) >= 0;
    return std::fclose(clear_refs) == 0 && written;
}

} // namespace loaderlens
