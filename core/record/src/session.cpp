// SPDX-License-Identifier: MIT
#include "loaderlens/session.hpp"

#include "loaderlens/own_memory.hpp"

#include <algorithm>
#include <ctime>
#include <pthread.h>
#include <set>
#include <sys/eventfd.h>
#include <unistd.h>
#include <utility>

namespace loaderlens {

namespace {

// Shares of the CPU budget; the rest (15%) is left to the writer and the main thread. The
// page-table walks (smaps_rollup, pagemap) get the most because their cost grows with resident
// memory, while statm and cgroup reads stay near-constant. A rollup sample runs the residency
// tier's pagemap walk too (the data files' share of each composite PSS); each tier's account pays
// its own part of such a joint run, so no share is counted twice (one account holding both
// shares for the joint run, beside the residency tier's own, let the tiers spend ~1.15x the
// budget). smaps_rollup is then read once per process per pss_max_age_ms while only the data
// files' pages move, and at every sample once anything else in the tree moved (RollupSampler).
// The full smaps of the maps tier is for the per-kind breakdown of the rest, at a lower rate
// (docs/benchmarks-sampling.md). The shares only divide the budget between the tiers: what
// holds the whole process to it is ProcessCpuBudget, charged with the kernel's count of all
// the recorder's threads.
constexpr double fast_share = 0.15, rollup_share = 0.25, maps_share = 0.10, cgroup_share = 0.05,
                 residency_share = 0.30;
// After a scan that found births (or the kernel told of some), the fast tier runs at its nominal
// interval this long whatever the budget: a burst of short-lived processes is followed, not
// sampled at the stretched interval that would miss most of them (issue 27: 65-70% of 2,000
// children of 150 ms were never seen at a 5% budget).
constexpr std::int64_t burst_follow_ms = 2000;
// The recorder unmaps the library text it no longer runs (drop_idle_file_pages) and gives back
// the free pages inside its heap (release_free_heap): first once
// start-up is over (the command launched, the first samples written), then at this period, which
// drops what a rare path (a birth burst, a marker) faulted in. One read of its own smaps, ~1 ms.
constexpr std::int64_t first_trim_ms = 1000, trim_period_ms = 60'000;

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Every thread of the recorder, as the kernel counts it (what /proc/PID/stat and SLURM see).
std::int64_t process_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The longest a deep run waits for the process's window beyond its own interval. Only CPU spent
// outside the tiers (a writer stalled on a slow disk, a bug) can hold it longer: the deep tiers
// then keep a floor of figures (every 30 s) rather than none.
constexpr std::int64_t max_deep_hold_ms = 30'000;

// A tier held back by the process's window waited `held_ms` beyond what its own account asked:
// the tier log gives the wait it really had, in steps of 100 ms (a row per change otherwise).
std::int64_t with_hold(std::int64_t interval_ms, std::int64_t held_ms) {
    if (held_ms <= 0) return interval_ms;
    return interval_ms + (held_ms + 99) / 100 * 100;
}

template <typename Sampler>
void forget_missing(Sampler& sampler, const std::vector<ProcessInfo>& before,
                    const std::vector<ProcessInfo>& now) {
    std::set<ProcessKey> alive;
    for (const auto& p : now)
        alive.insert(p.key);
    for (const auto& p : before)
        if (!alive.contains(p.key)) sampler.forget(p.key);
}

} // namespace

double Session::predicted_cost_us(DeepTiers tiers) const {
    return (tiers.rollup ? deep_cost_us_.rollup : 0) + (tiers.maps ? deep_cost_us_.maps : 0) +
           (tiers.residency ? deep_cost_us_.residency : 0);
}

Session::Session(SessionOptions options, TrackerOptions tracker, Recorder& recorder,
                 const RecordingClock& clock)
    : options_(std::move(options)), recorder_(recorder), clock_(clock), tracker_(tracker, clock),
      rollup_(options_.pss_max_age_ms), maps_(options_.maps_min_file_kb),
      residency_(options_.residency),
      fast_interval_(options_.fast_ms, options_.cpu_budget * fast_share),
      rollup_interval_(options_.rollup_ms, options_.cpu_budget * rollup_share),
      maps_interval_(options_.maps_ms, options_.cpu_budget * maps_share),
      cgroup_interval_(options_.cgroup_ms, options_.cpu_budget * cgroup_share),
      residency_interval_(options_.residency_ms, options_.cpu_budget * residency_share),
      budget_(options_.cpu_budget) {
    if (options_.markers) {
        markers_.emplace(*options_.markers);
        marker_watch_.emplace(*options_.markers, options_.marker_wake);
    }
    if (options_.sampled) sample_ack_.emplace(*options_.sampled);
    commit_wanted_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (options_.loader_events) loader_events_.emplace(*options_.loader_events);
    members_ = {tracker.main_pid ? tracker.main_pid : tracker.scan_root};
    cgroup_ = locate_memory_cgroup(tracker.main_pid ? tracker.main_pid : tracker.scan_root,
                                   &cgroup_problem_);
    snapshot_ = std::make_shared<const std::vector<ProcessInfo>>();
    // Every key exists before the threads start: each thread then only updates its own entries.
    for (const char* tier : {"fast", "cgroup", "rollup", "maps", "residency"})
        tier_logged_[tier] = {-1, 0};
}

Session::~Session() {
    if (fast_thread_.joinable() || deep_thread_.joinable()) stop();
    if (commit_wanted_fd_ >= 0) close(commit_wanted_fd_);
}

void Session::acknowledge_after_commit(std::int64_t boot_ns) {
    if (!sample_ack_) return;
    {
        std::lock_guard lock(queue_mutex_);
        ack_after_commit_ns_ = std::max(ack_after_commit_ns_, boot_ns);
    }
    const std::uint64_t one = 1;
    if (commit_wanted_fd_ >= 0) (void)!write(commit_wanted_fd_, &one, sizeof one);
}

void Session::start() {
    // The code that set the recording up (option parsing, the schema, the launch) is not run
    // again: dropped before the samplers fault theirs in, so the peak is not the two together.
    drop_idle_file_pages();
    release_free_heap();
    fast_thread_ = std::thread([this] { fast_loop(); });
    deep_thread_ = std::thread([this] { deep_loop(); });
    // Named for `top -H` and /proc/PID/task/TID/comm: the benches split the recorder's CPU by them.
    ::pthread_setname_np(fast_thread_.native_handle(), "loaderlens-fast");
    ::pthread_setname_np(deep_thread_.native_handle(), "loaderlens-deep");
}

bool Session::sleep_until(std::int64_t due_ms, bool deep_request) {
    std::unique_lock lock(wake_mutex_);
    const auto wait =
        std::chrono::milliseconds(std::max<std::int64_t>(0, due_ms - clock_.now_ms()));
    wake_.wait_for(lock, wait, [&] {
        return stopping_.load() || (deep_request && deep_request_boot_ns_ != 0);
    });
    return !stopping_.load();
}

bool Session::wait_fast(std::int64_t due_ms, std::vector<Marker>& markers) {
    if (!marker_watch_ || !marker_watch_->active()) return sleep_until(due_ms);
    // A new complete line in the marker file ends the wait early: the caller runs the fast tier
    // at once, with those markers, and keeps its regular schedule. A write that completed no
    // line (half a line, a close) does not, and neither does a wake a little before `due_ms`
    // (poll(2) counts whole ms: it would run the tier early, then again at `due_ms`).
    for (;;) {
        if (stopping_.load()) return false;
        const std::int64_t left = due_ms - clock_.now_ms();
        if (left <= 0) return true;
        if (marker_watch_->wait(left) != MarkerWatch::Wake::file_changed) continue;
        markers = markers_->poll(clock_);
        collect_marker_warnings();
        if (!markers.empty()) return !stopping_.load();
    }
}

void Session::request_deep_sample() {
    {
        std::lock_guard lock(wake_mutex_);
        deep_request_boot_ns_ = boottime_ns();
    }
    wake_.notify_all();
}

void Session::push(SampleBatch&& batch) {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(std::move(batch));
}

void Session::note_tier(SampleBatch& batch, const char* tier, std::int64_t interval_ms,
                        double cpu_us_per_run, int processes) {
    // Each thread touches only its own tiers' entries (all created in the constructor).
    auto& [logged_interval, logged_t] = tier_logged_.at(tier);
    if (logged_interval == interval_ms && batch.t_ms - logged_t < 10'000) return;
    batch.tier_stats.push_back({tier, interval_ms, cpu_us_per_run, processes});
    logged_interval = interval_ms;
    logged_t = batch.t_ms;
}

void Session::fast_run(SampleBatch& batch) {
    const std::int64_t cpu_start = thread_cpu_ns();
    // Strictly increasing: rows of one run are summed by t_ms, two runs must never share one.
    batch.t_ms = last_fast_t_ = std::max(clock_.now_ms(), last_fast_t_ + 1);
    std::vector<ProcessInfo> live;
    // Before the scan: a birth the events tell of that the scan then sees is not missed.
    const int births_told = births_.drain(members_);
    {
        std::lock_guard lock(tracker_mutex_);
        TreeChanges changes = tracker_.scan();
        batch.born = std::move(changes.born);
        batch.exited = std::move(changes.exited);
        batch.renamed = std::move(changes.renamed);
        live = tracker_.live();
    }
    members_.clear();
    for (const auto& p : live)
        members_.push_back(p.key.pid);
    births_.seen(members_);
    if (births_told > 0 || !batch.born.empty()) burst_until_ms_ = batch.t_ms + burst_follow_ms;
    for (const auto& gone : batch.exited)
        fast_.forget(gone.key);
    fast_.sample(live, batch.t_ms, batch.fast, batch.unavailable);
    std::int64_t total = 0;
    for (const auto& s : batch.fast)
        total += s.rss.value_or(0);
    total_rss_ = batch.fast.empty() ? -1 : total;
    processes_ = static_cast<int>(live.size());
    tree_gone_ = live.empty(); // also when the root was gone before the first scan
    if (markers_) {            // after those that woke this run, if any
        std::vector<Marker> more = markers_->poll(clock_);
        collect_marker_warnings();
        batch.markers.insert(batch.markers.end(), more.begin(), more.end());
    }
    const bool marker_wants_sample =
        !batch.markers.empty() && marker_watch_ && marker_watch_->active();
    if (loader_events_) batch.loader = loader_events_->poll(clock_, stopping_.load());

    // Publish the tree for the deep thread only after the births are queued, so their process
    // rows are written before any deep sample that refers to them.
    auto snapshot = std::make_shared<const std::vector<ProcessInfo>>(std::move(live));
    // The first scan reads every process on the machine once; later ones only what changed.
    // Counting it would stretch the 10 Hz tier for its first seconds.
    // A run that follows a burst is not paid from the account: it runs whatever the budget, and
    // a debt from it would stall the tier for tens of seconds once the burst is over (45 s
    // measured after 2,000 births at 5%).
    if (first_fast_run_ || batch.t_ms < burst_until_ms_)
        fast_interval_.note_cost(thread_cpu_ns() - cpu_start);
    else
        fast_interval_.observe_run(thread_cpu_ns() - cpu_start, clock_.now_ms());
    first_fast_run_ = false;

    if (batch.t_ms >= next_cgroup_ms_) {
        const std::int64_t cgroup_start = thread_cpu_ns();
        if (cgroup_)
            batch.cgroup = read_cgroup(*cgroup_);
        else
            batch.unavailable.push_back({0, "cgroup", cgroup_problem_});
        batch.system = read_system();
        cgroup_interval_.observe_run(thread_cpu_ns() - cgroup_start, clock_.now_ms());
        next_cgroup_ms_ = batch.t_ms + cgroup_interval_.interval_ms();
    }
    const int count = static_cast<int>(snapshot->size());
    note_tier(batch, "fast", fast_interval_.interval_ms(), fast_interval_.average_cpu_us(), count);
    note_tier(batch, "cgroup", cgroup_interval_.interval_ms(), cgroup_interval_.average_cpu_us(),
              count);
    push(std::move(batch));
    {
        std::lock_guard lock(snapshot_mutex_);
        snapshot_ = std::move(snapshot);
    }
    // After the snapshot: the deep run it asks for sees the tree of this very tick.
    if (marker_wants_sample) request_deep_sample();
}

void Session::fast_loop() {
    std::int64_t due = clock_.now_ms();
    std::vector<Marker> woken_by;
    do {
        SampleBatch batch;
        batch.markers = std::move(woken_by);
        woken_by.clear();
        fast_run(batch);
        // A run woken early by a marker leaves the regular schedule as it was.
        if (clock_.now_ms() >= due) {
            const std::int64_t now = clock_.now_ms();
            const bool burst = now < burst_until_ms_;
            due += burst ? options_.fast_ms : fast_interval_.interval_ms();
            due = std::max(due, now); // never try to catch up after a stall
            budget_.update(process_cpu_ns(), now);
            // The fast tier is not held by the process's window: its own share holds it, and
            // the deep tiers see its CPU in the window they check (ProcessCpuBudget), so what it
            // spends is what is left to them. Held, it went from 100 ms to 2.1 s at 64 workers.
        }
    } while (wait_fast(due, woken_by));
}

std::shared_ptr<const std::vector<ProcessInfo>> Session::deep_run(SampleBatch& batch,
                                                                  DeepTiers tiers) {
    std::shared_ptr<const std::vector<ProcessInfo>> live;
    {
        std::lock_guard lock(snapshot_mutex_);
        live = snapshot_;
    }
    batch.t_ms = last_deep_t_ = std::max(clock_.now_ms(), last_deep_t_ + 1);
    const int count = static_cast<int>(live->size());
    // A joint run: residency walks for the rollup tier's composite PSS. Each tier's account pays
    // its own part, once.
    const bool joint = tiers.rollup && tiers.residency && composite_pss();
    // Residency first: its pagemap walk gives the rollup tier the data files' share of each
    // process at this moment, for composite PSS (RollupSampler).
    FollowedShares followed;
    if (tiers.residency) {
        const std::int64_t start = thread_cpu_ns();
        residency_.sample(*live, batch.residency, batch.unavailable);
        followed = followed_shares(batch.residency.mapped, ::sysconf(_SC_PAGESIZE) / 1024);
        const std::int64_t cost = thread_cpu_ns() - start;
        residency_interval_.observe_run(cost, clock_.now_ms());
        deep_cost_us_.residency = static_cast<double>(cost) / 1000.0;
        // After a joint run the residency tier runs again at the sooner of the two tiers' due
        // times (deep_loop): that is the interval its log gives.
        const std::int64_t interval =
            joint ? std::min(rollup_interval_.interval_ms(), residency_interval_.interval_ms())
                  : residency_interval_.interval_ms();
        note_tier(batch, "residency", with_hold(interval, held_ms_),
                  residency_interval_.average_cpu_us(), count);
    }
    if (tiers.rollup) {
        const std::int64_t start = thread_cpu_ns();
        rollup_.sample(*live, batch.rollup, batch.unavailable,
                       tiers.residency ? &followed : nullptr);
        if (!batch.rollup.empty()) {
            std::int64_t total = 0;
            for (const auto& s : batch.rollup)
                total += s.pss.value_or(0);
            total_pss_ = total;
        }
        const std::int64_t cost = thread_cpu_ns() - start;
        rollup_interval_.observe_run(cost, clock_.now_ms());
        deep_cost_us_.rollup = static_cast<double>(cost) / 1000.0;
        note_tier(batch, "rollup", with_hold(rollup_interval_.interval_ms(), held_ms_),
                  rollup_interval_.average_cpu_us(), count);
    }
    if (tiers.maps) {
        const std::int64_t start = thread_cpu_ns();
        maps_.sample(*live, batch.maps, batch.unavailable);
        const std::int64_t cost = thread_cpu_ns() - start;
        maps_interval_.observe_run(cost, clock_.now_ms());
        deep_cost_us_.maps = static_cast<double>(cost) / 1000.0;
        note_tier(batch, "maps", with_hold(maps_interval_.interval_ms(), held_ms_),
                  maps_interval_.average_cpu_us(), count);
    }
    push(std::move(batch));
    return live;
}

void Session::deep_loop() {
    std::vector<ProcessInfo> previous;
    std::int64_t next_rollup = clock_.now_ms(), next_maps = next_rollup,
                 next_residency = next_rollup;
    std::int64_t last_requested_run = -options_.marker_sample_gap_ms;
    std::int64_t next_trim = clock_.now_ms() + first_trim_ms;
    // Wait for the first tree scan so that the first deep run has processes to look at.
    sleep_until(clock_.now_ms() + 20);
    for (;;) {
        const std::int64_t now = clock_.now_ms();
        std::int64_t requested_boot_ns = 0;
        if (now - last_requested_run >= options_.marker_sample_gap_ms) {
            std::lock_guard lock(wake_mutex_);
            requested_boot_ns = std::exchange(deep_request_boot_ns_, 0);
        }
        DeepTiers due{now >= next_rollup, now >= next_maps, now >= next_residency};
        if (requested_boot_ns != 0) {
            // A marker: every tier, now; the maps tier's per-kind breakdown only when its account
            // is not in debt (a full smaps sweep per marker took 0.6% of a core over a 20 s
            // PyTorch job; the data files' per-file figures come from the residency tier).
            due = {true, due.maps || !maps_interval_.in_debt(now), true};
            last_requested_run = now;
        }
        // Composite PSS needs the data files' share now: a rollup sample walks pagemap too.
        if (due.rollup && composite_pss()) due.residency = true;
        // The process's window: a run waits until it fits whole (a marker's sample does
        // not: a program may be waiting for its acknowledgement; it is charged all the same).
        std::int64_t held_until = now;
        if ((due.rollup || due.maps || due.residency) && requested_boot_ns == 0) {
            budget_.update(process_cpu_ns(), now);
            held_until = budget_.ready_at(predicted_cost_us(due), now);
            if (held_until > now && held_since_ < 0) held_since_ = now;
            if (held_since_ >= 0) held_until = std::min(held_until, held_since_ + max_deep_hold_ms);
        }
        if (held_until <= now && (due.rollup || due.maps || due.residency)) {
            held_ms_ = held_since_ < 0 ? 0 : now - held_since_;
            held_since_ = -1;
            SampleBatch batch;
            auto sampled = deep_run(batch, due);
            auto next = [&](const AdaptiveInterval& interval) {
                return std::max(now + interval.interval_ms(), clock_.now_ms());
            };
            if (due.rollup) next_rollup = next(rollup_interval_);
            if (due.maps) next_maps = next(maps_interval_);
            // After a joint run the residency tier may still run alone sooner, on its own account.
            if (due.residency)
                next_residency = due.rollup && composite_pss()
                                     ? std::min(next_rollup, next(residency_interval_))
                                     : next(residency_interval_);
            // Close the files of processes sampled last time and gone from this run's tree.
            forget_missing(rollup_, previous, *sampled);
            forget_missing(residency_, previous, *sampled);
            previous = *sampled;
            if (requested_boot_ns != 0) acknowledge_after_commit(requested_boot_ns);
        }
        if (now >= next_trim) {
            drop_idle_file_pages();
            release_free_heap();
            next_trim = now + trim_period_ms;
        }
        std::int64_t wake_at = std::min({next_rollup, next_maps, next_residency, next_trim});
        // Held: the due tiers stay due until the window can hold them.
        if (held_until > now) wake_at = std::min(held_until, next_trim);
        // A request within the gap after the last one waits for the gap's end, not longer.
        bool pending = false;
        {
            std::lock_guard lock(wake_mutex_);
            pending = deep_request_boot_ns_ != 0;
        }
        if (pending)
            wake_at = std::min(wake_at, last_requested_run + options_.marker_sample_gap_ms);
        if (!sleep_until(wake_at, !pending)) break;
    }
}

void Session::pump() {
    std::deque<SampleBatch> batches;
    std::int64_t ack = 0;
    {
        std::lock_guard lock(queue_mutex_);
        batches.swap(queue_);
        ack = std::exchange(ack_after_commit_ns_, 0);
    }
    std::uint64_t wanted = 0;
    if (commit_wanted_fd_ >= 0) (void)!read(commit_wanted_fd_, &wanted, sizeof wanted);
    if (write_error().empty()) { // else the recording is lost; keep the command running
        try {
            for (const auto& batch : batches)
                recorder_.write(batch);
            recorder_.commit();
        } catch (const std::exception& e) {
            std::lock_guard lock(error_mutex_);
            write_error_ = e.what();
        }
    }
    // After the commit, or its failure: a program waiting for it is never held up by the
    // recorder's own problem.
    if (ack != 0 && sample_ack_) sample_ack_->write(ack);
}

void Session::collect_marker_warnings() {
    std::vector<std::string> said = markers_->take_warnings();
    if (said.empty()) return;
    std::lock_guard lock(error_mutex_);
    warnings_.insert(warnings_.end(), said.begin(), said.end());
}

std::vector<std::string> Session::take_warnings() {
    std::lock_guard lock(error_mutex_);
    return std::exchange(warnings_, {});
}

std::string Session::write_error() const {
    std::lock_guard lock(error_mutex_);
    return write_error_;
}

void Session::stop() {
    {
        std::lock_guard lock(wake_mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (marker_watch_) marker_watch_->interrupt();
    if (fast_thread_.joinable()) fast_thread_.join();
    if (deep_thread_.joinable()) deep_thread_.join();
    // A last look at everything, so that the final figures and the exits are in the recording.
    SampleBatch last;
    fast_run(last);
    SampleBatch deep;
    held_ms_ = 0;
    deep_run(deep, {true, true, true});
    if (!last.markers.empty()) acknowledge_after_commit(boottime_ns());
    pump();
    if (write_error().empty()) {
        try {
            if (!residency_.pagemap_method().empty())
                recorder_.set_meta("residency_pagemap_method", residency_.pagemap_method());
            write_births_missed();
            recorder_.commit();
        } catch (const std::exception& e) {
            std::lock_guard lock(error_mutex_);
            write_error_ = e.what();
        }
    }
}

void Session::write_births_missed() {
    if (!births_.unavailable().empty()) {
        recorder_.set_meta("processes_missed_unavailable", births_.unavailable());
        return;
    }
    const BirthCount count = births_.count();
    recorder_.set_meta("processes_born_counted", std::to_string(count.born));
    recorder_.set_meta("processes_missed", std::to_string(count.missed));
    if (count.lower_bound) recorder_.set_meta("processes_missed_lower_bound", "1");
}

void Session::note_exit_status(pid_t pid, int wait_status) {
    std::lock_guard lock(tracker_mutex_);
    tracker_.note_exit_status(pid, wait_status);
}

LiveStatus Session::status() const {
    LiveStatus s;
    s.elapsed_ms = clock_.now_ms();
    s.processes = processes_;
    if (total_rss_ >= 0) s.total_rss = total_rss_.load();
    if (total_pss_ >= 0) s.total_pss = total_pss_.load();
    return s;
}

} // namespace loaderlens
