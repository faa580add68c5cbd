// SPDX-License-Identifier: MIT
// The format_version each JSON output carries at its top level, one constant per output, held
// here only (docs/outputs.md: an added key keeps the number; a removed or renamed key, a changed
// type or meaning bumps it). Each has a schema in docs/schema/, checked against real output by
// tests/schema/validate_outputs.py.
#pragma once

namespace loaderlens::format_version {

inline constexpr int report = 1;      // report --json          docs/schema/report.schema.json
inline constexpr int export_json = 1; // export --format json   docs/schema/export.schema.json
inline constexpr int ps = 1;          // ps --json              docs/schema/ps.schema.json
inline constexpr int load = 1;        // load --json            docs/schema/load.schema.json
inline constexpr int advise = 1;      // advise --json          docs/schema/advise.schema.json

} // namespace loaderlens::format_version
