// Parsers against /proc texts captured on a real machine (tests/fixtures/), and edge cases.
#include "loaderlens/proc_text.hpp"
#include "loaderlens/samplers.hpp"
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

BOOST_AUTO_TEST_CASE(status_fields_with_tabs) {
    FastSample s;
    parse_status_memory(fixture("proc_status.txt"), s);
    BOOST_TEST(s.rss.has_value());
    BOOST_TEST(*s.rss == *s.rss_anon + *s.rss_file + *s.rss_shmem); // the kernel's own identity
    BOOST_TEST(s.swap.value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(smaps_rollup_exact_names) {
    RollupSample r;
    parse_smaps_rollup(fixture("proc_smaps_rollup.txt"), r);
    BOOST_REQUIRE(r.pss && r.pss_anon && r.pss_file && r.pss_shmem);
    // "Pss" must not be confused with "Pss_Anon"/"Pss_Dirty": the split adds up to the whole.
    BOOST_TEST(std::abs(*r.pss - (*r.pss_anon + *r.pss_file + *r.pss_shmem)) <= 3);
    BOOST_TEST(*r.rss == *r.shared_clean + *r.shared_dirty + *r.private_clean + *r.private_dirty);
    BOOST_TEST(r.uss().value() == *r.private_clean + *r.private_dirty);
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
}

BOOST_AUTO_TEST_CASE(statm) {
    auto fields = parse_statm(fixture("proc_statm.txt"));
    BOOST_REQUIRE(fields);
    BOOST_TEST(fields->resident_pages >= fields->shared_pages);
    BOOST_TEST(!parse_statm("").has_value());
}

BOOST_AUTO_TEST_CASE(smaps_aggregation_keeps_totals) {
    const std::string text = fixture("proc_smaps.txt");
    for (std::int64_t threshold : {0, 1024}) {
        auto objects = aggregate_smaps(text, threshold);
        std::int64_t rss = 0, pss = 0, priv = 0;
        for (const auto& o : objects) {
            rss += o.rss_kb;
            pss += o.pss_kb;
            priv += o.private_clean_kb + o.private_dirty_kb;
        }
        BOOST_TEST(rss == naive_sum(text, "Rss"));
        BOOST_TEST(pss == naive_sum(text, "Pss"));
        BOOST_TEST(priv == naive_sum(text, "Private_Clean") + naive_sum(text, "Private_Dirty"));
    }
    auto objects = aggregate_smaps(text, 0);
    auto has = [&](MappingKind kind) {
        return std::any_of(objects.begin(), objects.end(),
                           [&](const auto& o) { return o.kind == kind; });
    };
    BOOST_TEST(has(MappingKind::heap));
    BOOST_TEST(has(MappingKind::stack));
    BOOST_TEST(has(MappingKind::anon));
    BOOST_TEST(has(MappingKind::file));
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
