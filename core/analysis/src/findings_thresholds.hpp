// SPDX-License-Identifier: MIT
// The thresholds of the findings, named. Each is documented in docs/findings.md with the
// measurement it comes from; change both together.
#pragma once

#include <cstdint>

namespace loaderlens::diagnosis::thresholds {

// Growth: a step between two epoch ends counts as growth above max(noise_kb, noise_share x value).
inline constexpr std::int64_t growth_noise_kb = 1024;
inline constexpr double growth_noise_share = 0.02;
// Epochs needed to call growth monotone (the issue: >= 3).
inline constexpr int monotone_epochs = 3;
// Without epochs: a worker's first settle_ms (or settle_share of its life, whichever is longer)
// are start-up, not growth; growth over the rest above trend_growth_kb is reported.
inline constexpr std::int64_t settle_ms = 2000;
inline constexpr double settle_share = 0.10;
inline constexpr std::int64_t trend_growth_kb = 16 * 1024;

// A mapped file counted per worker: its Σ RSS at least shared_file_ratio x its Σ PSS, and the
// difference at least shared_file_min_gap_kb.
inline constexpr double shared_file_ratio = 1.5;
inline constexpr std::int64_t shared_file_min_gap_kb = 4 * 1024;
// An RSS over-count (shared_file_cache, inherited_anon) is a warning only where the job is held
// to Σ RSS near a limit (limit_near_share below), never by a share of a figure that moves
// between identical runs.

// Anonymous memory inherited from main: Σ over workers of (RssAnon - Pss_Anon) at least this.
inline constexpr std::int64_t inherited_anon_min_kb = 16 * 1024;

// Readahead: the page cache gained at least this many times the distinct bytes read, while less
// than readahead_max_read_share of the file was read.
inline constexpr double readahead_amplification = 4.0;
inline constexpr double readahead_max_read_share = 0.5;

// Copy-on-read: a worker's Private_Dirty grows by at least cow_min_kb after its first sample
// while its RSS grows by less than cow_max_rss_share of that. Not 8 MiB: a torch worker's own
// start-up dirties 7-8.4 MiB of the pages it shares with main within its first second, so the
// finding came and went with whether its first PSS reading fell before that (docs/findings.md).
inline constexpr std::int64_t cow_min_kb = 16 * 1024;
inline constexpr double cow_max_rss_share = 0.5;
// ... or, whenever the copy happened (before the first PSS reading too): what a worker holds
// privately beyond its own growth (Private_Dirty - RssAnon growth since birth) is at least
// cow_birth_min_kb and at least cow_birth_inherited_share of the RssAnon it was born with.
inline constexpr std::int64_t cow_birth_min_kb = 32 * 1024;
inline constexpr double cow_birth_inherited_share = 0.5;

// Shared-memory batches and pinned staging: main's RssShmem / Locked at least this.
inline constexpr std::int64_t shmem_batches_min_kb = 1024;
inline constexpr std::int64_t pinned_min_kb = 512;

// Thrashing: pages evicted from the followed file at least this share of it.
inline constexpr double thrashing_evicted_share = 0.10;

// A limit is near when a view's peak (with the recorder) is above this share of it.
inline constexpr double limit_near_share = 0.90;

} // namespace loaderlens::diagnosis::thresholds
