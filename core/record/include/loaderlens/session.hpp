// SPDX-License-Identifier: MIT
// A recording session: the sampling threads and the hand-over of their batches to the recorder.
//
// Two sampling threads, so that a slow smaps walk of a large worker never delays the 10 Hz RSS:
//  - "fast": tree scan, statm/status, markers, cgroup and system figures;
//  - "deep": smaps_rollup and smaps, which cost ~15 µs per resident MiB, and residency (page
//    cache and pagemap of the mapped data files).
// Each tier's interval stretches under its share of the CPU budget (AdaptiveInterval), and a
// deep run waits while the whole process's last 10 s cannot hold it (ProcessCpuBudget). Batches go
// through a queue to the thread that owns the Recorder (SQLite connections are not shared).
#pragma once

#include "loaderlens/adaptive_interval.hpp"
#include "loaderlens/birth_counter.hpp"
#include "loaderlens/cgroup_sampler.hpp"
#include "loaderlens/clock.hpp"
#include "loaderlens/fast_sampler.hpp"
#include "loaderlens/loader_events.hpp"
#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/marker_tail.hpp"
#include "loaderlens/marker_watch.hpp"
#include "loaderlens/process_cpu_budget.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/residency_sampler.hpp"
#include "loaderlens/rollup_sampler.hpp"
#include "loaderlens/sample_ack.hpp"
#include "loaderlens/system_sampler.hpp"
#include "loaderlens/tree_tracker.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace loaderlens {

struct SessionOptions {
    std::int64_t fast_ms = 100, rollup_ms = 1000, maps_ms = 5000, cgroup_ms = 1000;
    std::int64_t residency_ms = 1000;
    ResidencyOptions residency;
    double cpu_budget = 0.05; // of one core, for all tiers together
    // A process's PSS reading is kept (and recorded with its age) while nothing that moves it
    // moved, at most this long (RollupSampler); 0 reads every process at every rollup sample.
    std::int64_t pss_max_age_ms = 5000;
    std::int64_t maps_min_file_kb = 1024;
    // The files beside the recording (sidecar.hpp), each read or written only through the
    // descriptors given here (the session keeps duplicates).
    std::optional<Sidecar> markers;
    // A marker wakes the fast thread at once (inotify) and asks for a sample of every tier, at
    // most one such sample per `marker_sample_gap_ms`. false: markers are read at the next tick
    // and sample nothing extra (what happens anyway where inotify is unavailable).
    bool marker_wake = true;
    std::int64_t marker_sample_gap_ms = 250;
    // LOADERLENS_SAMPLED: where to say that a marker's sample was taken (SampleAck).
    std::optional<Sidecar> sampled;
    // The reference loader's events file (replay): tailed like the markers, written as it comes.
    std::optional<Sidecar> loader_events;
};

struct LiveStatus {
    std::int64_t elapsed_ms = 0;
    int processes = 0;
    Kib total_rss, total_pss;
};

class Session {
  public:
    Session(SessionOptions options, TrackerOptions tracker, Recorder& recorder,
            const RecordingClock& clock);
    ~Session();

    void start();
    // Writes what the sampling threads produced; call from the recorder's thread, at least once
    // a second (commits each call).
    // A failed write (disk full...) stops the recording, never the command: see write_error().
    // A marker's sample is acknowledged (LOADERLENS_SAMPLED) here, after its commit: a program
    // told its figures were taken may be killed the next moment (OverMemoryKill) and they stay.
    void pump();
    // Readable when a batch waits to be committed and acknowledged: the caller polls it beside
    // its own descriptors and calls pump() at once.
    int commit_wanted_fd() const { return commit_wanted_fd_; }
    // Why writing failed, empty while all is well.
    std::string write_error() const;
    // One line each for what happened to the files beside the recording since the last call (a
    // marker file's name swapped for a link, a FIFO, another file), for the caller to print.
    std::vector<std::string> take_warnings();
    // Takes a last sample of everything, stops the threads, writes and commits.
    void stop();

    void note_exit_status(pid_t pid, int wait_status);
    LiveStatus status() const;
    // True once the tracker has seen processes and none is left.
    bool tree_gone() const { return tree_gone_.load(); }

  private:
    void fast_loop();
    void deep_loop();
    void fast_run(SampleBatch& batch);
    // Returns the tree it sampled.
    struct DeepTiers {
        bool rollup = false, maps = false, residency = false;
    };
    std::shared_ptr<const std::vector<ProcessInfo>> deep_run(SampleBatch& batch, DeepTiers tiers);
    // What a deep run of these tiers is expected to cost: each tier's last run (the deep thread's).
    double predicted_cost_us(DeepTiers tiers) const;
    // LOADERLENS_SAMPLED says boot_ns at the next pump(), after that commits what is queued.
    void acknowledge_after_commit(std::int64_t boot_ns);
    void push(SampleBatch&& batch);
    // Writes the tier's interval and cost to tier_stats when it changed, or every 10 s.
    // Rollup samples are composite (RollupSampler) and run the residency walk with them.
    bool composite_pss() const { return options_.pss_max_age_ms > 0; }
    void note_tier(SampleBatch& batch, const char* tier, std::int64_t interval_ms,
                   double cpu_us_per_run, int processes);
    // Sleeps until `due_ms`, stop() (false) or, with `deep_request`, a marker's request for a
    // sample of every tier.
    bool sleep_until(std::int64_t due_ms, bool deep_request = false);
    // The fast thread's sleep: also ends when the marker file gains lines (`markers`).
    bool wait_fast(std::int64_t due_ms, std::vector<Marker>& markers);
    void request_deep_sample();

    SessionOptions options_;
    Recorder& recorder_;
    const RecordingClock& clock_;

    std::mutex tracker_mutex_;
    TreeTracker tracker_;
    // The fast thread's: births the scans could not see (counted where the kernel says), and
    // the tree as the last scan saw it.
    BirthCounter births_;
    std::vector<pid_t> members_;
    // Until then the fast tier runs at its nominal interval whatever the budget: processes are
    // being born, and one that lives less than a stretched interval would never be seen.
    std::int64_t burst_until_ms_ = -1;
    FastSampler fast_;
    RollupSampler rollup_;
    MapsSampler maps_;
    ResidencySampler residency_;
    std::optional<MarkerTail> markers_;
    std::optional<MarkerWatch> marker_watch_;
    std::optional<SampleAck> sample_ack_;
    std::optional<LoaderEventTail> loader_events_;
    std::optional<CgroupLocation> cgroup_;
    std::string cgroup_problem_;
    AdaptiveInterval fast_interval_, rollup_interval_, maps_interval_, cgroup_interval_,
        residency_interval_;
    ProcessCpuBudget budget_;
    // The deep thread's: each tier's last cost, and since when the due tiers wait for the
    // process's account (-1: not held) and how long the last run was held.
    struct {
        double rollup = 0, maps = 0, residency = 0;
    } deep_cost_us_;
    std::int64_t held_since_ = -1, held_ms_ = 0;
    std::int64_t next_cgroup_ms_ = 0;
    std::int64_t last_fast_t_ = -1, last_deep_t_ = -1; // each owned by its thread
    bool first_fast_run_ = true;

    mutable std::mutex snapshot_mutex_;
    std::shared_ptr<const std::vector<ProcessInfo>> snapshot_;

    std::mutex queue_mutex_;
    std::deque<SampleBatch> queue_;
    // Under queue_mutex_: the newest marker time whose sample is queued and not yet acknowledged.
    std::int64_t ack_after_commit_ns_ = 0;
    int commit_wanted_fd_ = -1; // an eventfd

    std::mutex wake_mutex_;
    std::condition_variable wake_;
    // Under wake_mutex_: CLOCK_BOOTTIME of the newest marker read that asked for a sample of
    // every tier and has not had it yet (0: none).
    std::int64_t deep_request_boot_ns_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> tree_gone_{false};
    std::atomic<std::int64_t> total_rss_{-1}, total_pss_{-1};
    std::atomic<int> processes_{0};
    std::thread fast_thread_, deep_thread_;
    // Per tier: the interval and time last written to tier_stats. Keys fixed at construction.
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> tier_logged_;
    mutable std::mutex error_mutex_;
    std::string write_error_;
    std::vector<std::string> warnings_; // under error_mutex_
    // Moves what the marker file's tail has to say into warnings_ (the fast thread).
    void collect_marker_warnings();
    // The births no scan saw (BirthCounter), or why they cannot be counted, in the meta table.
    void write_births_missed();
};

} // namespace loaderlens
