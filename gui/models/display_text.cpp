// SPDX-License-Identifier: MIT
#include "display_text.hpp"

#include "loaderlens/units.hpp"

#include <sys/wait.h>

namespace loaderlens::gui {

QString kib_text(const Kib& kib) {
    return QString::fromStdString(format_kib(kib));
}

QString seconds_text(std::int64_t ms) {
    return QString::number(ms / 1000.0, 'f', 1) + " s";
}

QString exit_text(const std::optional<int>& status) {
    if (!status) return "not seen";
    if (WIFSIGNALED(*status)) return QString("killed by signal %1").arg(WTERMSIG(*status));
    if (WIFEXITED(*status)) return QString("exit %1").arg(WEXITSTATUS(*status));
    return QString("status %1").arg(*status);
}

qlonglong sort_value(const Kib& kib) {
    return kib ? static_cast<qlonglong>(*kib) : -1;
}

QString part_prefix(const RecordingData& data, int part) {
    for (const RecordingPart& p : data.parts)
        if (p.id == part) return QString::fromStdString(p.name) + " · ";
    return {};
}

} // namespace loaderlens::gui
