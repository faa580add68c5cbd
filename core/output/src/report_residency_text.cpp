// SPDX-License-Identifier: MIT
// The text report's residency section: per followed file, the page cache over the run, each
// process's present pages, and for a replay the loader's reads against both.
#include "loaderlens/one_line.hpp"
#include "loaderlens/units.hpp"
#include "report_format.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace loaderlens {

namespace {

using namespace report_format;

std::string percent(std::int64_t pages, std::int64_t of) {
    if (of <= 0) return "n/a";
    return fmt::format("{:.1f}%", 100.0 * static_cast<double>(pages) / static_cast<double>(of));
}

std::string pages_peak(const Peak& p, std::int64_t of) {
    if (!p.value) return "n/a";
    return fmt::format("{} at {}", percent(*p.value, of), seconds(p.t_ms));
}

std::string count(const Peak& p) {
    return p.value ? std::to_string(*p.value) : "n/a";
}

std::string times(const std::optional<double>& factor) {
    return factor ? fmt::format("{:.1f}x", *factor) : "n/a";
}

std::string share(const std::optional<double>& fraction) {
    return fraction ? fmt::format("{:.1f}%", 100.0 * *fraction) : "n/a";
}

void append_cache(std::string& out, const FileResidencySummary& s) {
    const std::int64_t pages = s.file.layout.file_pages;
    if (s.file.method == CacheMethod::unavailable) {
        out += fmt::format("      cache    unavailable: {}\n", one_line(s.file.unavailable_reason));
        return;
    }
    if (s.samples == 0) {
        out += "      cache    no sample taken\n";
        return;
    }
    out += fmt::format("      cache    first {}, peak {}, final {}; 90% {}\n",
                       percent(s.first_cached.value_or(0), pages), pages_peak(s.cached, pages),
                       percent(s.final_cached.value_or(0), pages),
                       s.time_to_90_ms ? "cached at " + seconds(*s.time_to_90_ms)
                                       : std::string("never reached"));
    auto at_least = [](const std::optional<std::int64_t>& count) {
        return count ? std::to_string(*count) : std::string("n/a");
    };
    if (s.file.method == CacheMethod::cachestat)
        out +=
            fmt::format("               evicted peak {} pages ({} before the recording, at "
                        "least {} during it), refaulted at least {} pages; dirty peak {}, "
                        "writeback peak {}\n",
                        count(s.evicted), at_least(s.evicted_at_start), at_least(s.evicted_during),
                        at_least(s.refaulted), count(s.dirty), count(s.writeback));
    else
        out += "               evicted, refaulted, dirty, writeback: n/a (mincore gives only "
               "cached pages)\n";
}

void append_loader_view(std::string& out, const FileResidencySummary& s) {
    out += fmt::format("      loader reads vs residency (the loader's dataset; cached before the "
                       "run: {})\n",
                       s.cached_before ? percent(*s.cached_before, s.file.layout.file_pages)
                                       : std::string("n/a"));
    if (s.checkpoints.empty()) {
        out += "        no residency sample after the loader began reading\n";
        return;
    }
    out += "            TIME    READ  CACHED  CACHE/READ  WORKER MAPPED  MAPPED/READ\n";
    for (const ResidencyCheckpoint& c : s.checkpoints)
        out += fmt::format("        {:>8}  {:>6}  {:>6}  {:>10}  {:>13}  {:>11}\n", seconds(c.t_ms),
                           share(c.read_fraction), share(c.cached_fraction),
                           times(c.cache_amplification), share(c.worker_mapped_fraction),
                           times(c.worker_mapped_amplification));
    if (const auto& h = s.headline)
        out += fmt::format(
            "      amplification at {} ({} of the file read): the page cache gained {} the bytes "
            "read (readahead),\n        each worker had {} the bytes it read mapped "
            "(fault-around, large folios; mean of the workers)\n",
            seconds(h->t_ms), share(h->read_fraction), times(h->cache_amplification),
            times(h->worker_mapped_amplification));
}

} // namespace

void append_residency(std::string& out, const ReportData& r) {
    if (r.residency.empty()) return;
    auto meta = [&r](const char* key) {
        auto it = r.meta.find(key);
        return it == r.meta.end() ? std::string("unavailable (never read)") : it->second;
    };
    out += fmt::format("Page-cache residency (page cache: cachestat(2) or mincore(2); present "
                       "pages: /proc/PID/pagemap via {}; computed RSS and PSS of a file: its "
                       "present pages, each divided by the tree's processes that have it)\n",
                       meta("residency_pagemap_method"));
    for (const FileResidencySummary& s : r.residency) {
        const std::int64_t bucket_bytes =
            saturating_mul(s.file.layout.bucket_pages, s.file.page_size);
        const std::string shape =
            s.file.identified() ? fmt::format("{}, {} buckets of {}", kib(s.file.size_bytes / 1024),
                                              s.file.layout.count, kib(bucket_bytes / 1024))
                                : std::string("size n/a"); // never opened: no size, no buckets
        out +=
            fmt::format("  {}  ({}, {}{})\n", one_line(s.file.path), shape,
                        to_string(s.file.method), s.file.requested ? ", followed on request" : "");
        if (s.max_carried_age_ms)
            out += fmt::format("      page cache read in rotation (a whole read cost over 2 ms): "
                               "parts carried up to {:.1f} s between reads (docs/residency.md)\n",
                               static_cast<double>(*s.max_carried_age_ms) / 1000.0);
        append_cache(out, s);
        std::int32_t outside = 0, unreadable = 0;
        for (const auto& per : s.processes) {
            const ProcessInfo* p = find_process(r.processes, per.process_id);
            const std::string who =
                p ? fmt::format("{} pid {}", process_label(*p), p->key.pid) : "?";
            out += fmt::format("      {:<30} present peak {:<16} final {}", who,
                               pages_peak(per.present, s.file.layout.file_pages),
                               percent(per.final_present, s.file.layout.file_pages));
            if (per.pss.value)
                out += fmt::format("   RSS peak {}, PSS peak {} (computed)", kib(per.rss.value),
                                   kib(per.pss.value));
            out += "\n";
            outside = std::max(outside, per.outside_sharers.value_or(0));
            unreadable = std::max(unreadable, per.outside_unreadable.value_or(0));
        }
        if (outside > 0)
            out += fmt::format("      computed PSS too large: up to {} process(es) outside the "
                               "tree also mapped this file, and their shares are not divided "
                               "out\n",
                               outside);
        else if (unreadable > 0)
            out += fmt::format("      computed PSS: {} process(es) outside the tree could not be "
                               "looked at (their maps: permission denied); if one maps this "
                               "file, the PSS is too large\n",
                               unreadable);
        if (s.loader_data_file) append_loader_view(out, s);
    }
    out += "\n";
}

} // namespace loaderlens
