// SPDX-License-Identifier: MIT
#include "workers_view.hpp"

#include "display_text.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QVBoxLayout>
#include <set>

namespace loaderlens::gui {

namespace {

struct Toggle {
    Figure figure;
    const char* label;
    QColor color;
    bool on;
};
const Toggle toggles[] = {
    {Figure::rss, "RSS", QColor(0x44, 0x44, 0x44), true},
    {Figure::pss, "PSS", QColor(0x1f, 0x77, 0xb4), true},
    {Figure::uss, "USS", QColor(0x2c, 0xa0, 0x2c), true},
    {Figure::rss_anon, "Anon", QColor(0xff, 0x7f, 0x0e), false},
    {Figure::rss_file, "File", QColor(0x8c, 0x56, 0x4b), false},
    {Figure::rss_shmem, "Shmem", QColor(0x94, 0x67, 0xbd), false},
    {Figure::private_dirty, "Private_Dirty", QColor(0xd6, 0x27, 0x28), false},
};
constexpr int lane_height = 64;
constexpr int stack_height = 170;

QString lane_name(const LaneKey& key) {
    switch (key.kind) {
    case LaneKey::Kind::worker:
        return QString("worker slot %1").arg(key.slot);
    case LaneKey::Kind::main:
        return "main";
    case LaneKey::Kind::helpers:
        return "helpers";
    }
    return {};
}

} // namespace

WorkersView::WorkersView(const ViewContext& context, QWidget* parent)
    : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel("Figures:"));
    for (const Toggle& t : toggles) {
        auto* box = new QCheckBox(t.label);
        box->setChecked(t.on);
        // The toggles are the legend: each in its line's colour.
        box->setStyleSheet(
            QString("QCheckBox { color: %1; font-weight: bold; }").arg(t.color.name()));
        box->setToolTip(QString("Show %1 in every lane (source: docs/figures.md)").arg(t.label));
        connect(box, &QCheckBox::toggled, this, [this] { redraw(); });
        toggles_[t.figure] = box;
        bar->addWidget(box);
    }
    bar->addStretch();
    auto* whole = new QPushButton("Whole run");
    whole->setToolTip("Show the whole recording (double-click a plot, or Ctrl+0)");
    connect(whole, &QPushButton::clicked, this, [this] { context_.window->show_all(); });
    bar->addWidget(whole);
    layout->addLayout(bar);

    plot_ = new QCustomPlot;
    frame_ = new PlotFrame(plot_, context_.window);
    frame_->on_range([this] { redraw(); });
    scroll_ = new QScrollArea;
    scroll_->setWidgetResizable(true);
    scroll_->setWidget(plot_);
    scroll_->setFrameShape(QFrame::NoFrame);
    layout->addWidget(scroll_);
    connect(scroll_->verticalScrollBar(), &QScrollBar::valueChanged, frame_,
            &PlotFrame::schedule_redraw);
    connect(context_.selection, &Selection::changed, this, [this] {
        highlight_selection();
        plot_->replot(QCustomPlot::rpQueuedReplot);
    });
}

int WorkersView::columns() const {
    const int width = stack_rect_ ? stack_rect_->width() : plot_->width();
    return std::max(50, width);
}

void WorkersView::rebuild_lanes() {
    // Lanes by (part, slot): a merged recording's nodes each have their own slot 0, main and
    // helpers (part 0 in any other recording).
    std::vector<LaneKey> keys;
    std::set<std::pair<int, int>> part_slots;
    std::set<int> parts{0};
    for (const WorkerLane& lane : document().lanes().workers)
        part_slots.insert({lane.part, lane.slot});
    for (const LaneKey& key : document().store().lanes()) {
        if (key.kind == LaneKey::Kind::worker) part_slots.insert({key.part, key.slot});
        parts.insert(key.part);
    }
    for (const RecordingPart& part : document().data().parts)
        parts.insert(part.id);
    for (const auto& [part, slot] : part_slots)
        keys.push_back(LaneKey::worker(slot, part));
    auto has_role = [&](Role role, int part) {
        for (const auto& [id, p] : document().processes())
            if (p.part == part &&
                (p.role == role || (role == Role::helper && p.role == Role::worker && p.slot < 0)))
                return true;
        return false;
    };
    for (int part : parts)
        if (has_role(Role::main, part) ||
            !document().store().points(LaneKey::main_lane(part), Figure::rss).empty())
            keys.push_back(LaneKey::main_lane(part));
    for (int part : parts)
        if (has_role(Role::helper, part) ||
            !document().store().points(LaneKey::helper_lane(part), Figure::rss).empty())
            keys.push_back(LaneKey::helper_lane(part));
    if (keys == built_for_ && stack_rect_) return;
    built_for_ = keys;

    plot_->clearItems();
    plot_->clearGraphs();
    plot_->plotLayout()->clear();
    lanes_.clear();
    stack_graphs_.clear();
    stack_keys_.clear();
    auto* margins = new QCPMarginGroup(plot_);

    stack_rect_ = new QCPAxisRect(plot_);
    plot_->plotLayout()->addElement(0, 0, stack_rect_);
    PlotFrame::style(stack_rect_, "Σ PSS (MiB)");
    stack_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    stack_label_ = PlotFrame::add_label(
        stack_rect_, "Σ PSS of the tree, stacked by lane: what the tree really holds", true);

    worker_lanes_ = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        Lane lane;
        lane.key = keys[i];
        lane.rect = new QCPAxisRect(plot_);
        plot_->plotLayout()->addElement(static_cast<int>(i) + 1, 0, lane.rect);
        PlotFrame::style(lane.rect, "MiB");
        lane.rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
        lane.rect->axis(QCPAxis::atLeft)->ticker()->setTickCount(2);
        for (const Toggle& t : toggles) {
            QCPGraph* graph = plot_->addGraph(lane.rect->axis(QCPAxis::atBottom),
                                              lane.rect->axis(QCPAxis::atLeft));
            // Cosmetic 1-pixel pens: a 2-pixel pen goes through Qt's stroker, ~5x slower on a
            // decimated (zigzag) line.
            graph->setPen(QPen(t.color, 0));
            graph->setAntialiased(false);
            graph->setAdaptiveSampling(true);
            lane.graphs[t.figure] = graph;
        }
        const QString prefix = part_prefix(document().data(), lane.key.part);
        QCPItemText* label = PlotFrame::add_label(lane.rect, prefix + lane_name(lane.key));
        label->setFont(QFont(font().family(), font().pointSize(), QFont::Bold));
        if (lane.key.kind == LaneKey::Kind::worker) {
            ++worker_lanes_;
            for (const WorkerLane& w : document().lanes().workers) {
                if (w.slot != lane.key.slot || w.part != lane.key.part) continue;
                std::vector<LaneProcess> gens = w.generations;
                std::sort(gens.begin(), gens.end(),
                          [](const auto& a, const auto& b) { return a.birth_ms < b.birth_ms; });
                for (std::size_t g = 1; g < gens.size(); ++g)
                    if (gens[g - 1].exit_ms && gens[g].birth_ms > *gens[g - 1].exit_ms)
                        lane.gaps.push_back({*gens[g - 1].exit_ms, gens[g].birth_ms});
                // In the colour of its band in the stack above.
                label->setColor(PlotFrame::color(lane.key.slot).darker(130));
                label->setText(QString("%1worker slot %2 · %3 generation%4")
                                   .arg(prefix)
                                   .arg(lane.key.slot)
                                   .arg(gens.size())
                                   .arg(gens.size() == 1 ? "" : "s"));
            }
        }
        plot_->plotLayout()->setRowStretchFactor(static_cast<int>(i) + 1, 1);
        lanes_.push_back(std::move(lane));
    }
    plot_->plotLayout()->setRowStretchFactor(0, double(stack_height) / lane_height);
    plot_->setMinimumHeight(stack_height + lane_height * static_cast<int>(keys.size()) + 40);
    frame_->rebuild();
    frame_->share_time_axis();
}

void WorkersView::fill_stack(int columns) {
    // The lanes with PSS, in lane order, and their index in the store's stack ticks.
    const double from = context_.window->from_s(), to = context_.window->to_s();
    const LaneStore& store = document().store();
    std::vector<LaneKey> keys;
    std::vector<int> index;
    for (const Lane& lane : lanes_)
        if (const int i = store.lane_index(lane.key); i >= 0) {
            keys.push_back(lane.key);
            index.push_back(i);
        }
    auto value = [&](const StackTick& tick, std::size_t k) -> std::int64_t {
        const auto i = static_cast<std::size_t>(index[k]);
        return i < tick.pss_by_lane.size() ? tick.pss_by_lane[i] : 0;
    };
    // One tick per pixel column: the one with the largest total (no peak of Σ PSS lost), and
    // the ticks just outside the range, so the bands reach the edges.
    const auto& ticks = store.stack();
    auto first = std::lower_bound(ticks.begin(), ticks.end(), from * 1000,
                                  [](const StackTick& t, double ms) { return t.t_ms < ms; });
    auto last = std::upper_bound(ticks.begin(), ticks.end(), to * 1000,
                                 [](double ms, const StackTick& t) { return ms < t.t_ms; });
    if (first != ticks.begin()) --first;
    if (last != ticks.end()) ++last;
    std::vector<const StackTick*> chosen;
    const double column_ms = std::max(1.0, (to - from) * 1000.0 / columns);
    std::int64_t current_column = std::numeric_limits<std::int64_t>::min();
    std::int64_t best_total = -1;
    for (auto it = first; it != last; ++it) {
        const auto column =
            static_cast<std::int64_t>(std::floor((it->t_ms - from * 1000.0) / column_ms));
        std::int64_t total = 0;
        for (std::size_t k = 0; k < keys.size(); ++k)
            total += value(*it, k);
        if (column != current_column) {
            chosen.push_back(&*it);
            current_column = column;
            best_total = total;
        } else if (total > best_total) {
            chosen.back() = &*it;
            best_total = total;
        }
    }
    if (keys != stack_keys_) {
        for (QCPGraph* g : stack_graphs_)
            plot_->removeGraph(g);
        stack_graphs_.clear();
        for (std::size_t i = 0; i < keys.size(); ++i) {
            QCPGraph* g = plot_->addGraph(stack_rect_->axis(QCPAxis::atBottom),
                                          stack_rect_->axis(QCPAxis::atLeft));
            const QColor c = keys[i].kind == LaneKey::Kind::worker ? PlotFrame::color(keys[i].slot)
                                                                   : QColor(0x88, 0x88, 0x88);
            g->setPen(QPen(c.darker(120), 0));
            QColor fill = c;
            fill.setAlpha(keys[i].kind == LaneKey::Kind::main ? 90 : 150);
            g->setBrush(fill);
            g->setAntialiased(false);
            g->setAntialiasedFill(false); // an antialiased fill of 34 bands cost 30 ms a replot
            // A sampled sum holds until the next sample: steps, not slopes. A line would ramp
            // across a gap with no tick (between two parts of a merged recording that did not
            // overlap, say) as if memory had grown through it.
            g->setLineStyle(QCPGraph::lsStepLeft);
            g->setName(part_prefix(document().data(), keys[i].part) + lane_name(keys[i]));
            if (i > 0) g->setChannelFillGraph(stack_graphs_.back());
            stack_graphs_.push_back(g);
        }
        stack_keys_ = keys;
    }
    double top = 0;
    std::vector<double> sums(chosen.size(), 0.0); // the bands below, per chosen tick
    for (std::size_t i = 0; i < keys.size(); ++i) {
        QVector<QCPGraphData> stacked;
        stacked.reserve(static_cast<qsizetype>(chosen.size()));
        for (std::size_t c = 0; c < chosen.size(); ++c) {
            sums[c] += static_cast<double>(value(*chosen[c], i)) / 1024.0;
            stacked.push_back(QCPGraphData(static_cast<double>(chosen[c]->t_ms) / 1000.0, sums[c]));
            top = std::max(top, sums[c]);
        }
        stack_graphs_[i]->data()->set(stacked, true);
    }
    stack_rect_->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, top * 1.08));
    // A lane whose PSS could not be read is left out of the sum, as `report` leaves it out of
    // its Σ PSS and says "partial": the label says so and names the lanes, never a silent 0.
    int partial = 0;
    QStringList unknown;
    for (const StackTick* tick : chosen) {
        if (!tick->partial()) continue;
        ++partial;
        for (std::size_t k = 0; k < keys.size(); ++k)
            if (tick->unknown(static_cast<std::size_t>(index[k]))) {
                const QString name =
                    part_prefix(document().data(), keys[k].part) + lane_name(keys[k]);
                if (!unknown.contains(name)) unknown << name;
            }
    }
    if (stack_label_)
        stack_label_->setText(
            partial == 0
                ? QString("Σ PSS of the tree, stacked by lane: what the tree really holds")
                : QString("Σ PSS of the tree, stacked by lane: partial at %1 of %2 ticks shown "
                          "(the PSS of processes in %3 could not be read: left out, not 0)")
                      .arg(partial)
                      .arg(chosen.size())
                      .arg(unknown.join(", ")));
}

bool WorkersView::lane_visible(const Lane& lane) const {
    const QRect r = lane.rect->outerRect();
    if (r.isEmpty()) return true; // not laid out yet
    const int top = scroll_->verticalScrollBar()->value();
    return r.bottom() >= top && r.top() <= top + scroll_->viewport()->height();
}

void WorkersView::redraw() {
    if (!stack_rect_) return;
    const double from = context_.window->from_s(), to = context_.window->to_s();
    const int cols = columns();
    // Worker lanes share one scale, the highest of their shown figures over the whole run: a
    // slot twice as large looks twice as large, and the scale stays put while zooming.
    double worker_top = 0;
    for (const Lane& lane : lanes_)
        if (lane.key.kind == LaneKey::Kind::worker)
            for (const auto& [figure, graph] : lane.graphs)
                if (toggles_.at(figure)->isChecked())
                    worker_top = std::max(
                        worker_top, static_cast<double>(document().store().peak(lane.key, figure)));
    for (Lane& lane : lanes_) {
        // Lanes scrolled out of sight are neither decimated nor drawn (the replot budget is
        // 20 ms at 1600x900 with 32 slots); scrolling draws them.
        const bool visible = lane_visible(lane);
        double top = 0;
        for (auto& [figure, graph] : lane.graphs) {
            const bool on = toggles_.at(figure)->isChecked();
            graph->setVisible(on && visible);
            if (!on) continue;
            top = std::max(top, static_cast<double>(document().store().peak(lane.key, figure)));
            if (!visible) continue;
            const auto points =
                envelope(document().store().points(lane.key, figure), from, to, cols, lane.gaps);
            graph->data()->set(PlotFrame::graph_data(points), true);
        }
        if (lane.key.kind == LaneKey::Kind::worker) top = worker_top;
        lane.rect->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, top / 1024.0 * 1.1));
    }
    fill_stack(cols);
}

void WorkersView::highlight_selection() {
    int slot = context_.selection->slot();
    bool main_selected = false;
    std::optional<int> part; // of the selected process: only its node's lane (merged recordings)
    if (context_.selection->process_id() != 0) {
        auto p = document().processes().find(context_.selection->process_id());
        if (p != document().processes().end()) {
            if (p->second.role == Role::worker) slot = p->second.slot;
            main_selected = p->second.role == Role::main;
            part = p->second.part;
        }
    }
    for (Lane& lane : lanes_) {
        const bool in_part = !part || lane.key.part == *part;
        const bool selected =
            in_part && ((lane.key.kind == LaneKey::Kind::worker && lane.key.slot == slot) ||
                        (lane.key.kind == LaneKey::Kind::main && main_selected));
        lane.rect->setBackground(selected ? QBrush(QColor(0xff, 0xf6, 0xd5)) : QBrush(Qt::white));
    }
}

void WorkersView::refresh() {
    if (!document().has_data()) return;
    rebuild_lanes();
    if (document().report()) frame_->set_epochs(document().report()->diagnosis.epochs);
    highlight_selection();
    frame_->schedule_redraw();
}

} // namespace loaderlens::gui
