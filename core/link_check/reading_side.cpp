// SPDX-License-Identifier: MIT
// Links the reading side alone (output, analysis, store, model), as the GUI does: a symbol the
// reading side uses but a recording-side layer defines fails this link (the layers' static
// libraries would otherwise hide it in any program that links everything). Never run.
#include "loaderlens/export.hpp"
#include "loaderlens/lanes.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/series.hpp"

#include <iostream>

int main(int argc, char** argv) {
    if (argc < 2) return 0;
    const loaderlens::Recording recording(argv[1]);
    const loaderlens::RecordingData data = recording.read_all();
    std::cout << loaderlens::series(data, {}).points.size() << loaderlens::lanes(data).mains.size()
              << loaderlens::render_report_text(loaderlens::build_report(recording));
    loaderlens::export_residency_csv(recording, std::cout);
    return 0;
}
