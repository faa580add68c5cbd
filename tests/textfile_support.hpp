// SPDX-License-Identifier: MIT
// What the live textfile's tree sums and counted views are held to (docs/metrics.md): the sums of
// one moment (the latest rollup tick, and the fast tick its processes were listed at), and the
// views' counted peaks the report's COUNTED column.
#pragma once

#include "metrics_support.hpp"

namespace loaderlens::test {

// Σ PSS and Σ USS of the export's last rollup tick, Σ RSS of its fast tick at or before it.
inline void require_one_tick_tree_sums(const Exposition& e, const nlohmann::json& exported) {
    const nlohmann::json& pss = exported["tree"]["pss"];
    BOOST_REQUIRE(!pss.empty());
    const std::int64_t at = pss.back()["t_ms"];
    for (const char* figure : {"pss", "uss"}) {
        const auto want = json_bytes(exported["tree"][figure].back()["kib"]);
        const auto got = e.value(std::string("loaderlens_tree_") + figure + "_bytes");
        BOOST_TEST(got == want, figure);
    }
    std::optional<long double> rss;
    for (const nlohmann::json& p : exported["tree"]["rss"])
        if (p["t_ms"].get<std::int64_t>() <= at) rss = json_bytes(p["kib"]);
    BOOST_TEST(e.value("loaderlens_tree_rss_bytes") == rss, "Σ RSS at the rollup tick " << at);
    const auto tree_rss = e.value("loaderlens_tree_rss_bytes"),
               tree_pss = e.value("loaderlens_tree_pss_bytes");
    if (tree_rss && tree_pss) BOOST_TEST(*tree_pss <= *tree_rss);
}

// Each view's loaderlens_scheduler_counted_peak_bytes is the report's counted_kib.
inline void require_counted_as_the_report(const Exposition& e, const nlohmann::json& report) {
    int compared = 0;
    for (const nlohmann::json& v : report["schedulers"]) {
        const auto got = e.value("loaderlens_scheduler_counted_peak_bytes",
                                 {{"view", v["key"].get<std::string>()}});
        BOOST_TEST(got == json_bytes(v["counted_kib"]), v["key"]);
        compared += v["counted_kib"].is_null() ? 0 : 1;
    }
    BOOST_TEST(compared >= 3);
}

} // namespace loaderlens::test
