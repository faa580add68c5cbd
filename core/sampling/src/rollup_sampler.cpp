// SPDX-License-Identifier: MIT
#include "loaderlens/rollup_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace loaderlens {

RollupSampler::~RollupSampler() {
    for (auto& [key, state] : states_)
        if (state.rollup_fd >= 0) ::close(state.rollup_fd);
}

void RollupSampler::forget(const ProcessKey& key) {
    auto it = states_.find(key);
    if (it == states_.end()) return;
    if (it->second.rollup_fd >= 0) ::close(it->second.rollup_fd);
    states_.erase(it);
}

int RollupSampler::open_rollup(const ProcessInfo& info, Problems& problems) {
    const std::string dir = "/proc/" + std::to_string(info.key.pid);
    int fd = ::open((dir + "/smaps_rollup").c_str(), O_RDONLY | O_CLOEXEC);
    // ENOENT while /proc/PID still exists means a kernel older than 4.14.
    if (fd < 0 && (errno != ENOENT || access(dir.c_str(), F_OK) == 0))
        problems.push_back({info.id, "rollup", unavailable_reason("smaps_rollup", errno)});
    return fd;
}

bool RollupSampler::read_rollup(const ProcessInfo& info, State& state, Problems& problems) {
    if (state.rollup_fd < 0) state.rollup_fd = open_rollup(info, problems);
    if (state.rollup_fd < 0) return false;
    long n = pread_whole(state.rollup_fd, buffer_);
    if (n <= 0) {
        // The open file pins the address space the process had at open(): after an exec it
        // reads as empty or ESRCH although the process lives on. Open it again once.
        ::close(state.rollup_fd);
        state.rollup_fd = open_rollup(info, problems);
        if (state.rollup_fd < 0) return false;
        n = pread_whole(state.rollup_fd, buffer_);
    }
    if (n < 0 && n != -ESRCH && n != -ENOENT)
        problems.push_back(
            {info.id, "rollup", unavailable_reason("smaps_rollup", static_cast<int>(-n))});
    // A zombie or exited process reads as empty: no sample rather than zeros.
    if (n <= 0) return false;
    RollupSample sample;
    sample.process_id = info.id;
    parse_smaps_rollup(buffer_, sample);
    if (!sample.rss) return false;
    if (!sample.pss_anon)
        problems.push_back({info.id, "rollup",
                            "Pss_Anon/Pss_File/Pss_Shmem: not in smaps_rollup before Linux 5.3"});
    state.reading = sample;
    state.has_reading = true;
    return true;
}

RollupSample RollupSampler::composite(const State& state, const FollowedShare& now,
                                      std::int64_t age_ms) {
    const FollowedShare& then = *state.share_at_read;
    RollupSample row = state.reading;
    auto shift = [](Kib& figure, std::int64_t from, std::int64_t to) {
        if (figure) figure = std::max<std::int64_t>(0, *figure - from + to);
    };
    shift(row.rss, then.rss_kb, now.rss_kb);
    shift(row.pss, then.pss_kb, now.pss_kb);
    shift(row.pss_file, then.pss_kb, now.pss_kb);
    // Which of the data files' pages are clean or dirty, shared or private, is not computed; they
    // move only clean ones (a write to one is a fault the composite does not explain), and the
    // rest stood (rest_stood), so Private_Dirty is the reading's. Left unset, a worker leaking
    // anonymous memory showed a flat Private_Dirty and the leak finding saw nothing.
    row.shared_clean = row.shared_dirty = row.private_clean = std::nullopt;
    row.pss_computed = now.pss_kb;
    row.age_ms = age_ms;
    return row;
}

namespace {
std::int64_t kib_per_page() {
    static const std::int64_t kb = ::sysconf(_SC_PAGESIZE) / 1024;
    return kb;
}
// How much unexplained movement a kept or composite reading tolerates: 0.5% of the tree's Σ PSS
// (half the error allowed on it), at least 256 KiB. Each KiB of movement moves Σ PSS by at most
// a KiB (a copy-on-write break adds its page; a page mapped by one more process only moves its
// shares), so Σ PSS stays within that of a fresh sweep, and so does each process's PSS.
std::int64_t slack_kb(std::int64_t tree_pss_kb) {
    return std::max<std::int64_t>(256, tree_pss_kb / 200);
}
} // namespace

bool RollupSampler::rest_stood(const State& state, const FollowedShare& now,
                               const ProcessKey& key) const {
    const std::int64_t resident_pages = stillness_.resident_pages(key);
    const std::int64_t anon_pages = stillness_.anon_pages(key);
    if (resident_pages < 0 || state.resident_at_read < 0 || anon_pages < 0 ||
        state.anon_at_read < 0)
        return false;
    // Less anonymous memory than at the reading: what was dropped may have been shared. More:
    // its PSS would be the reading's plus it, but not its USS (Private_Clean of a composite is not
    // computed), so the process is read afresh alone; the others keep theirs (a new private page
    // moves nobody else's PSS). Carried, USS stood still under 24 MiB written per worker and a
    // budget on it passed (check/budgets_just_above_pass_and_just_below_fail_with_junit).
    if (anon_pages != state.anon_at_read) return false;
    const std::int64_t moved = (resident_pages - state.resident_at_read) * kib_per_page() -
                               (now.rss_kb - state.share_at_read->rss_kb);
    if (std::abs(moved) > slack_kb(tree_pss_kb_)) return false;
    return true;
}

std::int64_t RollupSampler::unexplained_kb(const ProcessInfo& info, const State& state,
                                           const FollowedShare* share) const {
    const auto step = stillness_.step(info.key);
    if (!step || step->now.resident < 0 || step->before.resident < 0) return everything;
    const auto faults = static_cast<std::int64_t>(step->now.faults - step->before.faults);
    const auto major =
        static_cast<std::int64_t>(step->now.major_faults - step->before.major_faults);
    const std::int64_t resident_kb = (step->now.resident - step->before.resident) * kib_per_page();
    // The followed files' pages explain the resident pages' move with them, and the fewest faults
    // that can have mapped them: a major fault (a page read in) maps at least one, a minor fault
    // of a cached file page up to 16 (fault-around: fault_around_bytes, 64 KiB by default).
    // Copy-on-write faults are minor. Allowing one minor fault per page, as before, hid them
    // behind a file being faulted in: a torch job's workers broke 17 MiB of shared pages in
    // 350 ms unseen and their composite Σ PSS was 5.1% under smaps_rollup's. Where fault-around
    // maps fewer pages, the rest count as movement and the process is read afresh.
    constexpr std::int64_t fault_around_pages = 16;
    const std::int64_t share_kb =
        share && state.share_rss_kb >= 0 ? share->rss_kb - state.share_rss_kb : 0;
    const std::int64_t grown_pages = std::max<std::int64_t>(0, share_kb) / kib_per_page();
    const std::int64_t read_in = std::min(std::max<std::int64_t>(0, major), grown_pages);
    std::int64_t explained_faults =
        read_in + (grown_pages - read_in + fault_around_pages - 1) / fault_around_pages;
    // New private anonymous pages (rollup_sampler.hpp), when no major fault is left unexplained.
    std::int64_t anon_kb = 0;
    if (step->now.shared >= 0 && step->before.shared >= 0 && major <= read_in) {
        const std::int64_t anon_pages =
            (step->now.resident - step->now.shared) - (step->before.resident - step->before.shared);
        if (anon_pages > 0) {
            anon_kb = anon_pages * kib_per_page();
            explained_faults += anon_pages;
        }
    }
    return std::max<std::int64_t>(0, faults - explained_faults) * kib_per_page() +
           std::abs(resident_kb - share_kb - anon_kb);
}

void RollupSampler::note_moves(const std::vector<ProcessInfo>& live,
                               const FollowedShares* followed) {
    auto share_of = [followed](const ProcessInfo& info) -> const FollowedShare* {
        if (!followed) return nullptr;
        auto found = followed->find(info.id);
        return found == followed->end() ? nullptr : &found->second;
    };
    if (stillness_.exited_last() > 0) drift_kb_ += everything;
    for (const ProcessInfo& info : live) {
        auto it = states_.find(info.key);
        // Born since the last sample: it shares what its parent had.
        drift_kb_ +=
            it == states_.end() ? everything : unexplained_kb(info, it->second, share_of(info));
    }
    for (const ProcessInfo& info : live) {
        const FollowedShare* share = share_of(info);
        states_[info.key].share_rss_kb = share ? share->rss_kb : -1;
    }
}

void RollupSampler::look_outside(const std::vector<ProcessInfo>& live, std::int64_t now_ms) {
    // Outside mappers this many or more: a system library (rollup_sampler.hpp).
    constexpr int system_wide = 4;
    std::set<pid_t> tree;
    for (const ProcessInfo& info : live)
        tree.insert(info.key.pid);
    const auto files = files_of_tree(tree);
    std::set<FileKey> keys;
    for (const auto& [key, file] : files)
        keys.insert(key);
    const OutsideSharerCount outside = count_outside_sharers(tree, keys);
    std::map<FileKey, int> now;
    double moved_kb = 0, could_kb = 0;
    for (const auto& [key, file] : files) {
        auto found = outside.sharers.find(key);
        const int m = found == outside.sharers.end() ? 0 : found->second;
        now[key] = m;
        const double k = file.mappers, covered_kb = static_cast<double>(file.covered) / 1024;
        // A file the tree did not map at the last look: mapping it moved nothing, its pages
        // faulted in are the tree's own movement.
        if (auto before = outside_.find(key); looked_ && before != outside_.end())
            moved_kb += covered_kb * std::abs(k / (k + before->second) - k / (k + m));
        if (m > 0 && m < system_wide) could_kb += covered_kb * m / (k + m);
    }
    drift_kb_ += static_cast<std::int64_t>(std::ceil(moved_kb));
    may_outlive_ = could_kb <= static_cast<double>(slack_kb(tree_pss_kb_));
    outside_ = std::move(now);
    looked_ = true;
    looked_ms_ = now_ms;
}

void RollupSampler::sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                           Problems& problems, const FollowedShares* followed) {
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count();
    read_last_ = composite_last_ = 0;
    // Only when kept readings are allowed: a full sweep needs no look.
    const bool still = max_age_ms_ > 0 && stillness_.look(live);
    if (max_age_ms_ > 0) note_moves(live, followed);
    if (max_age_ms_ > 0 && safety_age_ms_ > max_age_ms_ &&
        (!looked_ || now_ms - looked_ms_ >= max_age_ms_))
        look_outside(live, now_ms);
    for (const ProcessInfo& info : live) {
        State& state = states_[info.key];
        const std::int64_t age = now_ms - state.read_ms;
        // Young, and nothing moved in the tree since the reading but the followed files' pages
        // (or less than the slack: the few faults of a process's own stack and heap).
        const bool in_age = age < max_age_ms_ || (may_outlive_ && age < safety_age_ms_);
        const bool young = max_age_ms_ > 0 && state.has_reading && in_age &&
                           drift_kb_ - state.drift_at_read <= slack_kb(tree_pss_kb_);
        if (still && young) {
            // The last row (a composite's computed part stands still with the tree too).
            RollupSample kept = state.last_row;
            kept.age_ms = age;
            out.push_back(kept);
            continue;
        }
        const FollowedShare* share = nullptr;
        if (followed) {
            auto it = followed->find(info.id);
            if (it != followed->end()) share = &it->second;
        }
        // The same files as at the reading (a file mapped or dropped since moves the rest too),
        // and the rest's resident memory where it was.
        if (young && share && state.share_at_read &&
            state.share_at_read->file_ids == share->file_ids &&
            rest_stood(state, *share, info.key)) {
            state.last_row = composite(state, *share, age);
            out.push_back(state.last_row);
            ++composite_last_;
            continue;
        }
        ++read_last_;
        if (!read_rollup(info, state, problems)) continue;
        state.read_ms = now_ms;
        state.share_at_read.reset();
        if (share && state.reading.pss && state.reading.rss) state.share_at_read = *share;
        state.resident_at_read = stillness_.resident_pages(info.key);
        state.anon_at_read = stillness_.anon_pages(info.key);
        state.drift_at_read = drift_kb_;
        state.last_row = state.reading;
        out.push_back(state.reading);
    }
    std::int64_t sum = 0;
    for (const RollupSample& row : out)
        sum += row.pss.value_or(0);
    tree_pss_kb_ = sum;
}

} // namespace loaderlens
