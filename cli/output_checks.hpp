// SPDX-License-Identifier: MIT
// What an output may be: the rule lives in core (loaderlens/output_rule.hpp), shared with the GUI;
// the CLI's commands name it from here.
#pragma once

#include "loaderlens/output_rule.hpp"

namespace loaderlens::cli {

using loaderlens::InputFiles;
using loaderlens::output_name_problem;
using loaderlens::replace_problem;
using loaderlens::sqlite_companion_suffixes;

} // namespace loaderlens::cli
