// SPDX-License-Identifier: MIT
// Exports a view as PNG, PDF or SVG (by the file's suffix). A plot view exports its plot whole,
// every lane (also those scrolled out of sight), as vectors in PDF and SVG; a table view exports
// what it shows. The file follows the output rule every command follows (docs/outputs.md): never
// the recording shown (`recording`, through any name, or its -wal/-shm), never through a symbolic
// link or into a FIFO, written whole.
#pragma once

#include <QString>

namespace loaderlens::gui {

class DashboardView;

// false, with a one-line reason naming the file.
bool export_view_to(DashboardView* view, const QString& path, QString* error,
                    const QString& recording = {});

} // namespace loaderlens::gui
