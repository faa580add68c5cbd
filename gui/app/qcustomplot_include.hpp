// SPDX-License-Identifier: MIT
// QCustomPlot's header uses `signals:` and `foreach`: it is included through this one header, so
// that a project-wide QT_NO_KEYWORDS / QT_NO_FOREACH would be lifted for it alone (api-notes.md).
#pragma once

#ifdef QT_NO_KEYWORDS
#undef QT_NO_KEYWORDS
#endif
#ifdef QT_NO_FOREACH
#undef QT_NO_FOREACH
#endif
#include <qcustomplot.h>
