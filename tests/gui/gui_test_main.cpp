// SPDX-License-Identifier: MIT
// The GUI tests' module: one QApplication for the whole run. Offscreen unless the ctest entry
// chose a platform (the Xvfb entry sets QT_QPA_PLATFORM=xcb and runs under xvfb-run).
#define BOOST_TEST_MODULE loaderlens_gui
#include <boost/test/unit_test.hpp>
#include <QApplication>

namespace {

struct QtApplication {
    QtApplication() {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
        // Tests never read or write the user's remembered layout and recent files.
        QApplication::setOrganizationName("loaderlens-tests");
        app = new QApplication(argc, argv);
    }
    ~QtApplication() { delete app; }
    int argc = 1;
    char name[16] = "gui_tests";
    char* argv[2] = {name, nullptr};
    QApplication* app = nullptr;
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(QtApplication);
