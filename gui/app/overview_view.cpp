// SPDX-License-Identifier: MIT
#include "overview_view.hpp"

#include "display_text.hpp"
#include "table_view.hpp"

#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

namespace loaderlens::gui {

namespace {

QTableView* make_table(QAbstractItemModel* model) {
    QTableView* table = make_table_view(model, false);
    table->setWordWrap(true);
    return table;
}

} // namespace

OverviewView::OverviewView(const ViewContext& context, QWidget* parent)
    : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    headline_ = new QLabel("Reading the recording…");
    headline_->setWordWrap(true);
    headline_->setTextFormat(Qt::RichText);
    QFont big = headline_->font();
    big.setPointSizeF(big.pointSizeF() * 1.35);
    headline_->setFont(big);
    about_ = new QLabel;
    about_->setWordWrap(true);
    about_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(headline_);
    layout->addWidget(about_);

    findings_ = new FindingListModel(this);
    finding_table_ = make_table(findings_);
    detail_ = new QTextBrowser;
    schedulers_ = new SchedulerTableModel(this);
    scheduler_table_ = make_table(schedulers_);
    scheduler_table_->setWordWrap(false);

    auto* top = new QSplitter(Qt::Horizontal);
    top->addWidget(finding_table_);
    top->addWidget(detail_);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(scheduler_table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    connect(finding_table_, &QTableView::clicked, this,
            [this](const QModelIndex& index) { pick_finding(index.row()); });
    connect(finding_table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const Finding* f = findings_->finding(index.row());
        if (!f) return;
        emit show_view(!f->file.empty() && f->slot < 0 && f->process_ids.empty() ? "files"
                                                                                 : "workers");
    });
    connect(finding_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& index) { show_detail(index.row()); });
}

void OverviewView::show_detail(int row) {
    const Finding* f = findings_->finding(row);
    if (!f) {
        detail_->clear();
        return;
    }
    QString html = "<h3>" + recorded_text(f->title).toHtmlEscaped() + "</h3><ul>";
    for (const auto& line : f->evidence)
        html += "<li>" + recorded_text(line).toHtmlEscaped() + "</li>";
    html += "</ul>";
    if (!f->advice.empty())
        html += "<p><b>What to change:</b> " + recorded_text(f->advice).toHtmlEscaped() + "</p>";
    html += "<p style='color:#666'>Key figure: " + figure_text(*f).toHtmlEscaped() + " (" +
            recorded_text(f->figure_name).toHtmlEscaped() + "); kind <code>" +
            recorded_text(f->kind).toHtmlEscaped() + "</code> (docs/findings.md)</p>";
    detail_->setHtml(html);
}

void OverviewView::pick_finding(int row) {
    const Finding* f = findings_->finding(row);
    if (!f) return;
    finding_table_->selectRow(row);
    show_detail(row);
    if (f->to_ms > f->from_ms) {
        const double span = static_cast<double>(f->to_ms - f->from_ms) / 1000.0;
        context_.window->set_range(f->from_ms / 1000.0 - span * 0.05,
                                   f->to_ms / 1000.0 + span * 0.05);
    }
    context_.selection->set(f->process_ids.empty() ? 0 : f->process_ids.front(), f->slot,
                            recorded_text(f->file));
}

void OverviewView::refresh() {
    const ReportData* report = document().report();
    const auto& meta = document().data().meta;
    // A host name is at most 64 bytes (HOST_NAME_MAX): one longer is not one, and unbroken it
    // would widen the window past the screen.
    auto meta_text = [&](const char* key, int max_chars = recorded_text_chars) {
        auto it = meta.find(key);
        return it == meta.end() ? QString() : recorded_text(it->second, max_chars);
    };
    // A replay's command line is long: elided here, whole in the tooltip.
    const QString command = meta_text("command");
    about_->setToolTip(command);
    // The report's count of births no scan saw (docs/recording.md, "Processes missed").
    QString missed;
    if (report && report->processes_missed.missed && *report->processes_missed.missed > 0)
        missed = QString(" (%1%2 more born and gone unrecorded)")
                     .arg(report->processes_missed.at_least ? "at least " : "")
                     .arg(*report->processes_missed.missed);
    about_->setText(
        QString("<b>%1</b> — %2 · %3 processes%4 · recorded on %5 (Linux %6)")
            .arg((command.size() > 140 ? command.left(140) + "…" : command).toHtmlEscaped(),
                 document().state_text().toHtmlEscaped())
            .arg(document().processes().size())
            .arg(missed)
            .arg(meta_text("host", 64).toHtmlEscaped(), meta_text("kernel", 64).toHtmlEscaped()));
    if (!report) {
        headline_->setText(document().has_data() ? "Diagnosing…" : "Reading the recording…");
        return;
    }
    if (report == shown_) return;
    shown_ = report;
    const auto& findings = report->diagnosis.findings;
    findings_->set_findings(findings);
    std::vector<ProcessInfo> infos;
    for (const auto& p : report->processes)
        infos.push_back(p.info);
    schedulers_->set_views(report->diagnosis.schedulers, infos);
    finding_table_->horizontalHeader()->setStretchLastSection(false);
    finding_table_->horizontalHeader()->setSectionResizeMode(FindingListModel::severity,
                                                             QHeaderView::ResizeToContents);
    finding_table_->horizontalHeader()->setSectionResizeMode(FindingListModel::title,
                                                             QHeaderView::Stretch);
    finding_table_->horizontalHeader()->setSectionResizeMode(FindingListModel::figure,
                                                             QHeaderView::ResizeToContents);
    finding_table_->resizeRowsToContents();
    scheduler_table_->resizeColumnsToContents();
    if (findings.empty()) {
        headline_->setText("No finding: nothing in this run's memory needs a change.");
    } else {
        static const char* const colors[] = {"#c62828", "#e68a00", "#1e6fc8"};
        const Finding& first = findings.front();
        headline_->setText(QString("<span style='color:%1'><b>%2</b></span> %3")
                               .arg(colors[static_cast<int>(first.severity)],
                                    QString(to_string(first.severity)).toUpper(),
                                    recorded_text(first.title).toHtmlEscaped()));
    }
    if (!findings.empty()) {
        const QSignalBlocker block(finding_table_->selectionModel());
        finding_table_->selectRow(0);
        show_detail(0);
    }
}

} // namespace loaderlens::gui
