// SPDX-License-Identifier: MIT
#include "loaderlens/tree_tracker.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <charconv>
#include <dirent.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens {

namespace {

AddressLayout layout_of(const StatFields& stat) {
    return {stat.start_stack, stat.start_brk, stat.arg_start, stat.env_start};
}

std::optional<StatFields> read_stat(pid_t pid) {
    auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat");
    if (!text) return std::nullopt;
    return parse_stat(*text);
}

} // namespace

std::string read_cmdline(pid_t pid) {
    auto text = read_text_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (!text) return {};
    while (!text->empty() && text->back() == '\0')
        text->pop_back();
    std::replace(text->begin(), text->end(), '\0', ' ');
    return *text;
}

TreeTracker::TreeTracker(TrackerOptions options, const RecordingClock& clock)
    : options_(std::move(options)), clock_(clock), rule_(options_.main_pid, options_.worker_match),
      exits_(options_.pidfd_exit_status, options_.poll_exits),
      children_lists_(options_.children_lists && OpenChildrenFiles::kernel_has_children_lists()) {}

std::vector<TreeTracker::Listed> TreeTracker::list_proc() const {
    std::vector<Listed> listed;
    DIR* dir = opendir("/proc");
    if (!dir) return listed;
    while (dirent* entry = readdir(dir)) {
        const char* name = entry->d_name;
        if (name[0] < '0' || name[0] > '9') continue;
        pid_t pid = 0;
        std::from_chars(name, name + std::char_traits<char>::length(name), pid);
        if (pid > 0) listed.push_back({pid, entry->d_ino});
    }
    closedir(dir);
    return listed;
}

ProcessFacts TreeTracker::facts_of(const ProcessInfo& info) const {
    ProcessFacts facts{info.key.pid, info.ppid, info.comm, info.cmdline, {}};
    if (auto layout = layouts_.find(info.key.pid); layout != layouts_.end())
        facts.layout = layout->second;
    return facts;
}

std::optional<ProcessFacts> TreeTracker::facts_of(pid_t pid) const {
    for (const auto& [key, info] : live_)
        if (key.pid == pid) return facts_of(info);
    // Main outside the tracked tree (the scan root itself, not tracked): read it as it is now.
    if (pid != options_.main_pid) return std::nullopt;
    auto stat = read_stat(pid);
    if (!stat) return std::nullopt;
    return ProcessFacts{pid, stat->ppid, stat->comm, read_cmdline(pid), layout_of(*stat)};
}

Role TreeTracker::role_by_rule(const ProcessInfo& info) const {
    return rule_.role_of(facts_of(info), [this](pid_t pid) { return facts_of(pid); });
}

void TreeTracker::assign_role(ProcessInfo& info) {
    info.role = role_by_rule(info);
    if (info.role == Role::worker) {
        auto [slot, generation] = slots_.acquire();
        info.slot = slot;
        info.generation = generation;
    }
}

void TreeTracker::reassign_role(ProcessInfo& info) {
    if (info.role == Role::main) return;
    const Role role = role_by_rule(info);
    if (role == info.role) return;
    if (info.role == Role::worker) { // caught before its exec: it was never a worker
        slots_.cancel(info.slot);
        info.slot = info.generation = -1;
    }
    assign_role(info);
}

void TreeTracker::read_listing(std::int64_t now, const std::set<pid_t>& ended,
                               std::unordered_map<pid_t, StatFields>& fresh) {
    // A PID seen before, outside the tree, with the same /proc inode is the same process (a new
    // process under a reused PID gets a new inode): not read again. New PIDs, changed inodes and
    // tree members that are due are read.
    std::vector<Listed> listing = list_proc();
    std::unordered_map<pid_t, Known> still_there;
    still_there.reserve(listing.size());
    for (const auto& [pid, inode] : listing) {
        auto old = known_.find(pid);
        const bool same = old != known_.end() && old->second.inode == inode;
        const bool member = same && live_.contains(ProcessKey{pid, old->second.start_ticks});
        if (same && (!member || !stat_due(pid, now, ended))) {
            still_there.emplace(pid, old->second);
            continue;
        }
        const std::int64_t due_ms = same ? old->second.stat_due_ms : 0;
        // Members are read through a file kept open; the others once.
        if (auto stat = member ? member_stats_.read(pid, inode) : read_stat(pid)) {
            still_there.emplace(pid, Known{stat->start_ticks, stat->ppid, inode,
                                           next_due(pid, now, due_ms, ended)});
            fresh.emplace(pid, std::move(*stat));
        }
    }
    known_ = std::move(still_there);
}

void TreeTracker::read_members(std::int64_t now, const std::set<pid_t>& ended,
                               std::unordered_map<pid_t, StatFields>& fresh) {
    for (const auto& [key, info] : live_) {
        auto known = known_.find(key.pid);
        if (known == known_.end() || !stat_due(key.pid, now, ended)) continue;
        // Unreadable: reaped (the open file follows its process), so gone from the machine.
        auto stat = member_stats_.read(key.pid, known->second.inode);
        if (!stat) {
            known_.erase(known);
            continue;
        }
        known->second = Known{stat->start_ticks, stat->ppid, known->second.inode,
                              next_due(key.pid, now, known->second.stat_due_ms, ended)};
        fresh.emplace(key.pid, std::move(*stat));
    }
}

bool TreeTracker::stat_due(pid_t pid, std::int64_t now, const std::set<pid_t>& ended) const {
    auto known = known_.find(pid);
    if (known == known_.end()) return true;
    auto member = live_.find(ProcessKey{pid, known->second.start_ticks});
    if (member == live_.end()) return false;
    const bool settled = exits_.polled(member->first) &&
                         now - member->second.birth_ms >= young_ms && !ended.contains(pid);
    return !settled || now >= known->second.stat_due_ms;
}

// When a member's stat is read next if nothing else asks. A settled member's reads are spread
// over the interval by PID, so that a fleet born at once is not read at once.
std::int64_t TreeTracker::next_due(pid_t pid, std::int64_t now, std::int64_t due_ms,
                                   const std::set<pid_t>& ended) const {
    const std::int64_t spread = pid % 10 * options_.settled_stat_ms / 10;
    auto known = known_.find(pid);
    auto member = known == known_.end() ? live_.end()
                                        : live_.find(ProcessKey{pid, known->second.start_ticks});
    if (member == live_.end()) return now + spread; // new: young while it is a member
    if (now - member->second.birth_ms < young_ms)
        return std::max(due_ms, member->second.birth_ms + young_ms + spread);
    if (ended.contains(pid) || !exits_.polled(member->first)) return due_ms;
    return now + options_.settled_stat_ms;
}

std::vector<pid_t> TreeTracker::newborn_from_listing() const {
    std::unordered_map<pid_t, std::vector<pid_t>> children;
    for (const auto& [pid, known] : known_)
        children[known.ppid].push_back(pid);
    const pid_t self = getpid();
    std::vector<pid_t> frontier{options_.scan_root};
    std::vector<pid_t> newborn;
    if (options_.track_scan_root && known_.contains(options_.scan_root))
        newborn.push_back(options_.scan_root);
    while (!frontier.empty()) {
        pid_t parent = frontier.back();
        frontier.pop_back();
        auto found = children.find(parent);
        if (found == children.end()) continue;
        for (pid_t child : found->second) {
            if (child == self) continue;
            frontier.push_back(child);
            newborn.push_back(child);
        }
    }
    return newborn;
}

std::vector<pid_t>
TreeTracker::newborn_from_children(std::unordered_map<pid_t, StatFields>& fresh) {
    // The scan root's list (it is a member when tracked), the members', then the lists of the
    // newborn found on the way: a child may have forked before any tick saw it.
    std::vector<ProcessKey> frontier{ProcessKey{options_.scan_root, 0}};
    for (const auto& [key, info] : live_)
        if (key.pid != options_.scan_root) frontier.push_back(key);
    const pid_t self = getpid();
    std::vector<pid_t> newborn, children;
    while (!frontier.empty()) {
        const ProcessKey parent = frontier.back();
        frontier.pop_back();
        // The scan root by its PID alone: its file is kept whether or not it is tracked.
        const ProcessKey file_key =
            parent.pid == options_.scan_root ? ProcessKey{parent.pid, 0} : parent;
        if (!children_.read(file_key, children)) continue;
        for (pid_t child : children) {
            if (child == self || std::find(newborn.begin(), newborn.end(), child) != newborn.end())
                continue;
            auto known = known_.find(child);
            if (known != known_.end() &&
                live_.contains(ProcessKey{child, known->second.start_ticks}))
                continue;
            struct stat dir {};
            if (::stat(("/proc/" + std::to_string(child)).c_str(), &dir) != 0) continue;
            // Already read this tick: a member's PID that now names this newer process.
            if (!fresh.contains(child)) {
                auto stat = read_stat(child);
                if (!stat) continue;
                fresh.emplace(child, std::move(*stat));
            }
            const StatFields& stat = fresh.at(child);
            known_[child] = Known{stat.start_ticks, stat.ppid, dir.st_ino, 0};
            const ProcessKey key{child, stat.start_ticks};
            newborn.push_back(child);
            frontier.push_back(key);
        }
    }
    return newborn;
}

TreeChanges TreeTracker::scan() {
    TreeChanges changes;
    const std::int64_t now = clock_.now_ms();
    std::set<pid_t> ended;
    for (const ProcessKey& key : exits_.exited())
        ended.insert(key.pid);
    const bool full = !children_lists_ || now >= next_full_scan_ms_;
    if (full) next_full_scan_ms_ = now + options_.full_scan_ms;

    // 1. Refresh what we know: the whole machine's listing, or the members alone.
    std::unordered_map<pid_t, StatFields> fresh;
    if (full)
        read_listing(now, ended, fresh);
    else
        read_members(now, ended, fresh);

    // 2. Exits: a live process whose PID is gone, now names another process, or is a zombie.
    for (auto it = live_.begin(); it != live_.end();) {
        const ProcessKey key = it->first;
        auto now_known = known_.find(key.pid);
        auto stat = fresh.find(key.pid);
        const bool reused =
            now_known != known_.end() && now_known->second.start_ticks != key.start_ticks;
        const bool gone = now_known == known_.end() || reused;
        bool zombie = !gone && stat != fresh.end() && stat->second.state == 'Z';
        if (!gone && !zombie) {
            ++it;
            continue;
        }
        ProcessInfo info = std::move(it->second);
        info.exit_ms = now;
        // Its PID names a newer process: this one ended before that one began (the PID was
        // free in between), however late the scan noticed it.
        if (reused)
            info.exit_ms = std::max(
                info.birth_ms, std::min(clock_.ticks_to_ms(now_known->second.start_ticks), now));
        // Best first: our own wait (the command, orphans), then the pidfd (reaped by another
        // process, e.g. main reaping its workers), then a zombie's stat field 52.
        if (auto watched = exits_.take_exit_status(key)) info.exit_status = watched;
        if (zombie && !info.exit_status) info.exit_status = stat->second.exit_code;
        if (auto reaped = reaped_status_.find(key.pid); reaped != reaped_status_.end()) {
            info.exit_status = reaped->second;
            reaped_status_.erase(reaped);
        }
        if (info.role == Role::worker) slots_.release(info.slot);
        layouts_.erase(key.pid);
        changes.exited.push_back(std::move(info));
        it = live_.erase(it);
    }

    // 3. Renames of live members: exec or prctl(PR_SET_NAME), e.g. pt_data_worker. A young
    //    process may still exec without changing comm (python -> python under spawn or
    //    forkserver), so its command line and address layout are looked at again during its
    //    first seconds. Every member's layout is updated first: the rule compares a child's
    //    with its parent's.
    std::set<pid_t> new_layout;
    for (const auto& [key, info] : live_)
        if (auto stat = fresh.find(key.pid); stat != fresh.end()) {
            // All zeros: exiting (its memory is gone) or unreadable: keep what was known.
            const AddressLayout now_layout = layout_of(stat->second);
            if (!now_layout.readable()) continue;
            AddressLayout& layout = layouts_[key.pid];
            if (layout != now_layout) new_layout.insert(key.pid);
            layout = now_layout;
        }
    for (auto& [key, info] : live_) {
        auto stat = fresh.find(key.pid);
        if (stat == fresh.end()) continue;
        info.ppid = stat->second.ppid;
        const bool young = now - info.birth_ms < young_ms;
        if (stat->second.comm == info.comm && !young) continue;
        std::string cmdline = read_cmdline(key.pid);
        // An exiting process has released its memory: no command line, a zero layout. That is
        // no exec, and must not turn a worker into a helper in its last tick.
        if (cmdline.empty()) continue;
        if (stat->second.comm == info.comm && cmdline == info.cmdline) {
            if (young && new_layout.contains(key.pid)) reassign_role(info); // exec, same argv
            continue;
        }
        info.comm = stat->second.comm;
        info.cmdline = std::move(cmdline);
        reassign_role(info);
        changes.renamed.push_back(info);
    }

    // 4. Births: descendants of the scan root that are not live yet, oldest first.
    std::vector<pid_t> newborn = full ? newborn_from_listing() : newborn_from_children(fresh);
    std::erase_if(newborn, [&](pid_t pid) {
        return live_.contains(ProcessKey{pid, known_[pid].start_ticks}) || !fresh.contains(pid) ||
               fresh[pid].state == 'Z';
    });
    std::sort(newborn.begin(), newborn.end(), [&](pid_t a, pid_t b) {
        return std::pair(known_[a].start_ticks, a) < std::pair(known_[b].start_ticks, b);
    });
    for (pid_t pid : newborn) {
        const StatFields& stat = fresh[pid];
        ProcessInfo info;
        info.id = next_id_++;
        info.key = ProcessKey{pid, stat.start_ticks};
        info.ppid = stat.ppid;
        info.comm = stat.comm;
        info.cmdline = read_cmdline(pid);
        info.birth_ms = clock_.ticks_to_ms(stat.start_ticks);
        for (const auto& [key, other] : live_)
            if (key.pid == stat.ppid) info.parent_id = other.id;
        layouts_[pid] = layout_of(stat);
        exits_.watch(info.key);
        assign_role(info);
        live_.emplace(info.key, info);
        changes.born.push_back(std::move(info));
    }
    member_stats_.keep_only([this](pid_t pid) {
        auto known = known_.find(pid);
        return known != known_.end() && live_.contains(ProcessKey{pid, known->second.start_ticks});
    });
    children_.keep_only([this](const ProcessKey& key) {
        return live_.contains(key) || key == ProcessKey{options_.scan_root, 0};
    });
    return changes;
}

std::vector<ProcessInfo> TreeTracker::live() const {
    std::vector<ProcessInfo> out;
    out.reserve(live_.size());
    for (const auto& [key, info] : live_)
        out.push_back(info);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
}

void TreeTracker::note_exit_status(pid_t pid, int wait_status) {
    reaped_status_[pid] = wait_status;
}

} // namespace loaderlens
