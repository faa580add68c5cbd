// SPDX-License-Identifier: MIT
// Parsers against /proc texts captured on a real machine (tests/fixtures/), and edge cases; the
// pure units next to them (AdaptiveInterval, WorkerSlots).
#include "loaderlens/adaptive_interval.hpp"
#include "loaderlens/fast_sampler.hpp"
#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/pagemap.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/rollup_sampler.hpp"
#include "loaderlens/worker_slots.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <sstream>

using namespace loaderlens;

namespace {
std::string fixture(const std::string& name) {
    std::ifstream in(std::string(LOADERLENS_FIXTURES_DIR) + "/" + name);
    BOOST_REQUIRE_MESSAGE(in, "missing fixture " << name);
    return {std::istreambuf_iterator<char>(in), {}};
}

// An independent, naive sum of one field over every mapping of an smaps text.
std::int64_t naive_sum(const std::string& smaps, const std::string& field) {
    std::istringstream lines(smaps);
    std::string line;
    std::int64_t sum = 0;
    while (std::getline(lines, line))
        if (line.rfind(field + ":", 0) == 0) sum += std::stoll(line.substr(field.size() + 1));
    return sum;
}
} // namespace

BOOST_AUTO_TEST_SUITE(parsers)

// The captured texts' own figures, field by field (read off the fixture files).
BOOST_AUTO_TEST_CASE(status_fields_with_tabs) {
    FastSample s;
    parse_status_memory(fixture("proc_status.txt"), s);
    BOOST_TEST(s.rss.value_or(-1) == 22276);      // VmRSS
    BOOST_TEST(s.rss_anon.value_or(-1) == 15552); // RssAnon
    BOOST_TEST(s.rss_file.value_or(-1) == 6724);  // RssFile
    BOOST_TEST(s.rss_shmem.value_or(-1) == 0);    // RssShmem
    BOOST_TEST(s.swap.value_or(-1) == 0);         // VmSwap
    // A process with shared anonymous memory (shmem) and mlock()ed pages, captured the same way.
    FastSample t;
    parse_status_memory(fixture("proc_status_shmem.txt"), t);
    BOOST_TEST(t.rss.value_or(-1) == 24284);
    BOOST_TEST(t.rss_anon.value_or(-1) == 11260);
    BOOST_TEST(t.rss_file.value_or(-1) == 6880);
    BOOST_TEST(t.rss_shmem.value_or(-1) == 6144);
    BOOST_TEST(t.swap.value_or(-1) == 0);
    BOOST_TEST(*t.rss == *t.rss_anon + *t.rss_file + *t.rss_shmem); // the kernel's own identity
}

BOOST_AUTO_TEST_CASE(smaps_rollup_exact_names) {
    RollupSample r;
    parse_smaps_rollup(fixture("proc_smaps_rollup.txt"), r);
    BOOST_TEST(r.rss.value_or(-1) == 22276);
    BOOST_TEST(r.pss.value_or(-1) == 21128); // not Pss_Dirty (15552) nor Pss_Anon
    BOOST_TEST(r.pss_anon.value_or(-1) == 15552);
    BOOST_TEST(r.pss_file.value_or(-1) == 5576);
    BOOST_TEST(r.pss_shmem.value_or(-1) == 0);
    BOOST_TEST(r.shared_clean.value_or(-1) == 1580);
    BOOST_TEST(r.shared_dirty.value_or(-1) == 0);
    BOOST_TEST(r.private_clean.value_or(-1) == 5144);
    BOOST_TEST(r.private_dirty.value_or(-1) == 15552);
    BOOST_TEST(r.swap.value_or(-1) == 0);
    BOOST_TEST(r.swap_pss.value_or(-1) == 0);
    BOOST_TEST(r.locked.value_or(-1) == 0);
    BOOST_TEST(r.uss().value_or(-1) == 5144 + 15552);

    RollupSample t;
    parse_smaps_rollup(fixture("proc_smaps_rollup_shmem.txt"), t);
    BOOST_TEST(t.rss.value_or(-1) == 24288);
    BOOST_TEST(t.pss.value_or(-1) == 16637);
    BOOST_TEST(t.pss_anon.value_or(-1) == 6114);
    BOOST_TEST(t.pss_file.value_or(-1) == 4379);
    BOOST_TEST(t.pss_shmem.value_or(-1) == 6144);
    BOOST_TEST(t.shared_clean.value_or(-1) == 3844);
    BOOST_TEST(t.shared_dirty.value_or(-1) == 10300);
    BOOST_TEST(t.private_clean.value_or(-1) == 3036);
    BOOST_TEST(t.private_dirty.value_or(-1) == 7108);
    BOOST_TEST(t.locked.value_or(-1) == 512);
    BOOST_TEST(t.uss().value_or(-1) == 3036 + 7108);

    // No captured text has swap (this machine has none): every field a distinct value, so that
    // a field read under another's name cannot pass.
    RollupSample d;
    parse_smaps_rollup("Rss: 1 kB\nPss: 2 kB\nPss_Dirty: 99 kB\nPss_Anon: 3 kB\nPss_File: 4 kB\n"
                       "Pss_Shmem: 5 kB\nShared_Clean: 6 kB\nShared_Dirty: 7 kB\n"
                       "Private_Clean: 8 kB\nPrivate_Dirty: 9 kB\nSwap: 10 kB\nSwapPss: 11 kB\n"
                       "Locked: 12 kB\n",
                       d);
    const std::vector<Kib> got{d.rss,           d.pss,          d.pss_anon,     d.pss_file,
                               d.pss_shmem,     d.shared_clean, d.shared_dirty, d.private_clean,
                               d.private_dirty, d.swap,         d.swap_pss,     d.locked};
    for (std::size_t i = 0; i < got.size(); ++i)
        BOOST_TEST(got[i].value_or(-1) == static_cast<std::int64_t>(i + 1), "field " << i);
    FastSample f;
    parse_status_memory("VmHWM: 99 kB\nVmRSS: 1 kB\nRssAnon: 2 kB\nRssFile: 3 kB\n"
                        "RssShmem: 4 kB\nVmSwap: 5 kB\nVmPTE: 98 kB\n",
                        f);
    BOOST_TEST(f.rss.value_or(-1) == 1);
    BOOST_TEST(f.rss_anon.value_or(-1) == 2);
    BOOST_TEST(f.rss_file.value_or(-1) == 3);
    BOOST_TEST(f.rss_shmem.value_or(-1) == 4);
    BOOST_TEST(f.swap.value_or(-1) == 5);
}

BOOST_AUTO_TEST_CASE(missing_field_is_unavailable_not_zero) {
    RollupSample r; // a pre-5.3 kernel has no Pss_Anon
    parse_smaps_rollup("Rss:  100 kB\nPss:  50 kB\nPrivate_Clean: 1 kB\n", r);
    BOOST_TEST(*r.pss == 50);
    BOOST_TEST(!r.pss_anon.has_value());
    BOOST_TEST(!r.uss().has_value()); // Private_Dirty missing: USS cannot be computed
}

BOOST_AUTO_TEST_CASE(stat_with_hostile_comm) {
    auto fields = parse_stat("123 (a) b (c)) S 45 123 123 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 "
                             "98765 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 "
                             "0 0 0 0 0 0 0 0 0 0 9");
    BOOST_REQUIRE(fields);
    BOOST_TEST(fields->comm == "a) b (c)");
    BOOST_TEST(fields->ppid == 45);
    BOOST_TEST(fields->state == 'S');
    BOOST_TEST(fields->start_ticks == 98765u);
    BOOST_TEST(fields->exit_code == 9);
    BOOST_TEST(!parse_stat("garbage").has_value());
    auto real = parse_stat(fixture("proc_stat.txt"));
    BOOST_REQUIRE(real);
    BOOST_TEST(real->comm == "python3");
    BOOST_TEST(real->state == 'R');
    BOOST_TEST(real->ppid == 4563);
    BOOST_TEST(real->start_ticks == 78870u); // field 22
    BOOST_TEST(real->exit_code == 0);        // field 52
}

BOOST_AUTO_TEST_CASE(statm) {
    auto fields = parse_statm(fixture("proc_statm.txt"));
    BOOST_REQUIRE(fields);
    BOOST_TEST(fields->size_pages == 6259);
    BOOST_TEST(fields->resident_pages == 5569); // x 4 KiB = VmRSS 22276 of proc_status.txt
    BOOST_TEST(fields->shared_pages == 1681);   // x 4 KiB = RssFile + RssShmem 6724
    auto shmem = parse_statm(fixture("proc_statm_shmem.txt"));
    BOOST_REQUIRE(shmem);
    BOOST_TEST(shmem->size_pages == 6789);
    BOOST_TEST(shmem->resident_pages == 6073);
    BOOST_TEST(shmem->shared_pages == 3256);
    BOOST_TEST(!parse_statm("").has_value());
    BOOST_TEST(!parse_statm("12 34").has_value());
}

BOOST_AUTO_TEST_CASE(smaps_aggregation_keeps_totals) {
    const std::string text = fixture("proc_smaps.txt");
    // The fixture's totals, summed field by field over its 126 mappings.
    BOOST_TEST(naive_sum(text, "Rss") == 22276);
    BOOST_TEST(naive_sum(text, "Pss") == 21124); // smaps rounds per mapping; the rollup says 21128
    for (std::int64_t threshold : {0, 1024}) {
        auto objects = aggregate_smaps(text, threshold);
        MappedObject sum;
        for (const auto& o : objects) {
            sum.size_kb += o.size_kb;
            sum.rss_kb += o.rss_kb;
            sum.pss_kb += o.pss_kb;
            sum.shared_clean_kb += o.shared_clean_kb;
            sum.shared_dirty_kb += o.shared_dirty_kb;
            sum.private_clean_kb += o.private_clean_kb;
            sum.private_dirty_kb += o.private_dirty_kb;
            sum.swap_kb += o.swap_kb;
        }
        BOOST_TEST_CONTEXT("threshold " << threshold) {
            BOOST_TEST(sum.size_kb == 25040);
            BOOST_TEST(sum.rss_kb == 22276);
            BOOST_TEST(sum.pss_kb == 21124);
            BOOST_TEST(sum.shared_clean_kb == 1580);
            BOOST_TEST(sum.shared_dirty_kb == 0);
            BOOST_TEST(sum.private_clean_kb == 5144);
            BOOST_TEST(sum.private_dirty_kb == 15552);
            BOOST_TEST(sum.swap_kb == 0);
            // 24 files (by inode and path), heap, stack, anonymous, [vdso] and the like; at 1024
            // KiB libc and libpython stay, the 22 others are one object.
            BOOST_TEST(objects.size() == (threshold == 0 ? 28u : 7u));
        }
    }
    // Per object, from the fixture (each mapping's fields added up by hand).
    auto objects = aggregate_smaps(text, 1024);
    auto find = [&](MappingKind kind, const std::string& path) -> const MappedObject& {
        auto it = std::find_if(objects.begin(), objects.end(),
                               [&](const auto& o) { return o.kind == kind && o.path == path; });
        BOOST_REQUIRE_MESSAGE(it != objects.end(), "no " << kind << " " << path);
        return *it;
    };
    const auto& heap = find(MappingKind::heap, "");
    BOOST_TEST(heap.size_kb == 1744);
    BOOST_TEST(heap.rss_kb == 1676);
    BOOST_TEST(heap.private_dirty_kb == 1676);
    const auto& anon = find(MappingKind::anon, ""); // 8 unnamed mappings
    BOOST_TEST(anon.size_kb == 13236);
    BOOST_TEST(anon.rss_kb == 12320);
    BOOST_TEST(anon.pss_kb == 12320);
    const auto& stack = find(MappingKind::stack, "");
    BOOST_TEST(stack.rss_kb == 48);
    BOOST_TEST(stack.size_kb == 132);
    const auto& other = find(MappingKind::other, ""); // [vvar], [vvar_vclock], [vdso], [vsyscall]
    BOOST_TEST(other.size_kb == 36);
    BOOST_TEST(other.rss_kb == 4);
    BOOST_TEST(other.shared_clean_kb == 4);
    const auto& libc = find(MappingKind::file, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    BOOST_TEST(libc.inode == 332835u);
    BOOST_TEST(libc.size_kb == 1876);
    BOOST_TEST(libc.rss_kb == 1336);
    BOOST_TEST(libc.pss_kb == 412);
    BOOST_TEST(libc.shared_clean_kb == 1256);
    BOOST_TEST(libc.private_clean_kb == 56);
    BOOST_TEST(libc.private_dirty_kb == 24);
    const auto& python =
        find(MappingKind::file, "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0");
    BOOST_TEST(python.inode == 18834u);
    BOOST_TEST(python.rss_kb == 5232);
    BOOST_TEST(python.private_clean_kb == 3916);
    BOOST_TEST(python.private_dirty_kb == 1316);
    // The 22 files under 1024 KiB resident, folded into one object.
    const auto& small = find(MappingKind::other, "(files under threshold)");
    BOOST_TEST(small.rss_kb == 22276 - 1676 - 12320 - 48 - 4 - 1336 - 5232);
    BOOST_TEST(small.rss_kb == 1660);
    BOOST_TEST(small.pss_kb == 21124 - 1676 - 12320 - 48 - 0 - 412 - 5232);
    // Largest first.
    BOOST_TEST(objects.front().kind == MappingKind::anon);
    BOOST_TEST(std::is_sorted(objects.begin(), objects.end(),
                              [](const auto& a, const auto& b) { return a.rss_kb > b.rss_kb; }));
}

// Every kept smaps field a distinct value (the captured text has no swap and no shared dirty
// pages), over two mappings of one file and an anonymous one: each lands in its own member.
BOOST_AUTO_TEST_CASE(smaps_fields_land_in_their_own_members) {
    const std::string mapping_fields = "Size: 1 kB\nKernelPageSize: 4 kB\nRss: 2 kB\nPss: 3 kB\n"
                                       "Pss_Dirty: 90 kB\nShared_Clean: 4 kB\nShared_Dirty: 5 kB\n"
                                       "Private_Clean: 6 kB\nPrivate_Dirty: 7 kB\n"
                                       "Referenced: 91 kB\nSwap: 8 kB\nSwapPss: 92 kB\n"
                                       "Locked: 93 kB\nVmFlags: rd mr mw me\n";
    const std::string text =
        "7f0000000000-7f0000001000 r--s 00000000 fe:00 4242   /data/with space.npy\n" +
        mapping_fields +
        "7f0000001000-7f0000002000 r--s 00001000 fe:00 4242   /data/with space.npy\n" +
        mapping_fields + "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n" + mapping_fields;
    auto objects = aggregate_smaps(text, 0);
    BOOST_REQUIRE_EQUAL(objects.size(), 2u);
    const auto& file = objects[0].kind == MappingKind::file ? objects[0] : objects[1];
    const auto& anon = objects[0].kind == MappingKind::file ? objects[1] : objects[0];
    BOOST_TEST(file.path == "/data/with space.npy");
    BOOST_TEST(file.inode == 4242u);
    const std::vector<std::int64_t> got{
        file.size_kb,         file.rss_kb,           file.pss_kb,           file.shared_clean_kb,
        file.shared_dirty_kb, file.private_clean_kb, file.private_dirty_kb, file.swap_kb};
    for (std::size_t i = 0; i < got.size(); ++i)
        BOOST_TEST(got[i] == 2 * static_cast<std::int64_t>(i + 1), "file field " << i);
    BOOST_TEST(anon.kind == MappingKind::anon);
    BOOST_TEST(anon.swap_kb == 8);
    BOOST_TEST(anon.shared_dirty_kb == 5);
    BOOST_TEST(anon.rss_kb == 2);
}

// The kernel writes a newline in a mapped file's name as \012 (and nothing else escaped): both
// parsers of maps text give the name back as it is on disk. (The text as the kernel wrote it for
// a file named "a\nb.npy": names_from_outside has it from a live process.)
BOOST_AUTO_TEST_CASE(a_newline_in_a_mapped_name_is_decoded) {
    const std::string text =
        "7f0000000000-7f0000001000 r--s 00000000 fe:00 4242   /data/a\\012b.npy\n"
        "Size: 4 kB\nRss: 4 kB\nPss: 4 kB\n";
    const auto objects = aggregate_smaps(text, 0);
    BOOST_REQUIRE_EQUAL(objects.size(), 1u);
    BOOST_TEST(objects[0].path == "/data/a\nb.npy");
    const auto mappings = parse_file_mappings(text);
    BOOST_REQUIRE_EQUAL(mappings.size(), 1u);
    BOOST_TEST(mappings[0].path == "/data/a\nb.npy");
    BOOST_TEST(maps_path("/data/plain.npy") == "/data/plain.npy");
    BOOST_TEST(maps_path("/x\\01") == "/x\\01"); // cut short: as it is
}

BOOST_AUTO_TEST_CASE(mapping_kinds) {
    BOOST_TEST(classify_mapping("") == MappingKind::anon);
    BOOST_TEST(classify_mapping("[heap]") == MappingKind::heap);
    BOOST_TEST(classify_mapping("[stack]") == MappingKind::stack);
    BOOST_TEST(classify_mapping("[vdso]") == MappingKind::other);
    BOOST_TEST(classify_mapping("/dev/shm/torch_123 (deleted)") == MappingKind::shmem);
    BOOST_TEST(classify_mapping("/memfd:pin (deleted)") == MappingKind::shmem);
    BOOST_TEST(classify_mapping("/dev/zero (deleted)") == MappingKind::shmem);
    BOOST_TEST(classify_mapping("/data/x.npy (deleted)") == MappingKind::deleted_file);
    BOOST_TEST(classify_mapping("/data/with space.npy") == MappingKind::file);
}

// AdaptiveInterval: an account that earns the tier's share of each wall-clock millisecond (saved
// up to share x 2 s) and spends each run's CPU time; in debt, the next run waits until the debt
// is paid. Figures below computed by hand from that rule.
BOOST_AUTO_TEST_CASE(adaptive_interval_stretches_under_the_budget) {
    constexpr std::int64_t ms = 1'000'000;   // ns
    AdaptiveInterval rollup(500, 0.05);      // 500 ms nominal, 5% of a core (cap 100 ms of CPU)
    BOOST_TEST(rollup.interval_ms() == 500); // nothing measured yet
    rollup.observe_run(10 * ms, 0);          // 10 ms in debt: repaid in 200 ms, nominal holds
    BOOST_TEST(rollup.interval_ms() == 500);
    BOOST_TEST(rollup.balance_us() == -10'000.0);

    // A lasting cost of 100 ms per run at 5%: each run waits 2 s, and the account stays level.
    AdaptiveInterval heavy(500, 0.05);
    std::int64_t t = 0;
    heavy.observe_run(100 * ms, t);
    BOOST_TEST(heavy.interval_ms() == 2000);
    for (int i = 0; i < 10; ++i) {
        t += heavy.interval_ms();
        heavy.observe_run(100 * ms, t);
        BOOST_TEST(heavy.interval_ms() == 2000);
    }
    // Spent exactly the budget: 11 runs x 100 ms over 20 s of waits plus the last 2 s owed.
    BOOST_TEST(std::abs(heavy.balance_us() + 100'000.0) < 1.0);

    // One expensive run among cheap ones stretches the next wait only: the first cheap run after
    // the debt is paid is back at nominal (the moving average this replaced took many runs).
    AdaptiveInterval spike(500, 0.05);
    t = 0;
    for (int i = 0; i < 5; ++i, t += 500)
        spike.observe_run(1 * ms, t); // earns 25 ms per 500 ms, spends 1 ms
    BOOST_TEST(spike.interval_ms() == 500);
    BOOST_TEST(std::abs(spike.balance_us() - (4 * 25'000.0 - 5 * 1000.0)) < 1.0); // 95 ms saved
    spike.observe_run(300 * ms, t); // min(95 + 25, 100) - 300 = -200 ms: 4 s to pay
    BOOST_TEST(spike.interval_ms() == 4000);
    t += spike.interval_ms();
    spike.observe_run(1 * ms, t); // paid, minus 1 ms
    BOOST_TEST(spike.interval_ms() == 500);

    // Savings are capped at share x 2 s (100 ms of CPU here): an hour of quiet does not buy an
    // hour's worth of expensive runs.
    AdaptiveInterval quiet(500, 0.05);
    quiet.observe_run(0, 0);
    quiet.observe_run(0, 3'600'000);
    BOOST_TEST(quiet.balance_us() == 100'000.0);
    quiet.observe_run(600 * ms, 3'600'001); // 100 - 600 = -500 ms: 10 s
    BOOST_TEST(std::abs(quiet.interval_ms() - 10'000) <= 1);
    // In debt until it is paid, counting what it earned since its last run.
    BOOST_TEST(quiet.in_debt(3'600'001 + 9'990));
    BOOST_TEST(!quiet.in_debt(3'600'001 + 10'000));
}

BOOST_AUTO_TEST_CASE(adaptive_interval_bounds) {
    constexpr std::int64_t ms = 1'000'000;
    // Never below nominal, however cheap (or a clock that stepped back, or a negative cost).
    AdaptiveInterval cheap(100, 0.05);
    cheap.observe_run(0, 1000);
    BOOST_TEST(cheap.interval_ms() == 100);
    cheap.observe_run(-5 * ms, 900);
    BOOST_TEST(cheap.interval_ms() == 100);
    BOOST_TEST(cheap.balance_us() == 0.0); // no earnings backwards in time, no gain from -5 ms
    // No budget (0 or negative): the nominal interval whatever the cost.
    for (double budget : {0.0, -0.1}) {
        AdaptiveInterval unbudgeted(100, budget);
        unbudgeted.observe_run(10'000 * ms, 0);
        BOOST_TEST(unbudgeted.interval_ms() == 100);
    }
    // No upper bound: the wait is debt / share however large (a 1 s run at 1%: 100 s).
    AdaptiveInterval costly(1000, 0.01);
    costly.observe_run(1000 * ms, 0);
    BOOST_TEST(std::abs(costly.interval_ms() - 100'000) <= 1);
    // Exactly at the budget: the nominal interval (25 ms per run at 5% needs 500 ms).
    AdaptiveInterval at_budget(500, 0.05);
    at_budget.observe_run(25 * ms, 0);
    BOOST_TEST(at_budget.interval_ms() == 500);
    at_budget.observe_run(26 * ms, 500); // 25 earned, 51 spent: -26 ms, 520 ms
    BOOST_TEST(std::abs(at_budget.interval_ms() - 520) <= 1);
}

BOOST_AUTO_TEST_CASE(worker_slots_are_reused_lowest_first) {
    WorkerSlots slots;
    auto a = slots.acquire(), b = slots.acquire(), c = slots.acquire();
    BOOST_TEST(a.slot == 0);
    BOOST_TEST(b.slot == 1);
    BOOST_TEST(c.slot == 2);
    slots.release(1);
    slots.release(0);
    auto d = slots.acquire(), e = slots.acquire();
    BOOST_TEST(d.slot == 0);
    BOOST_TEST(d.generation == 1);
    BOOST_TEST(e.slot == 1);
    BOOST_TEST(e.generation == 1);
    BOOST_TEST(slots.acquire().slot == 3);
}

BOOST_AUTO_TEST_SUITE_END()
