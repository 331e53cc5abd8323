#pragma once
// `--schedule-plot FILE.svg`: the estimated step's pipeline schedule as the papers draw it
// (Narayanan et al. 2021, fig. 3 and 4): a row per stage over time, each micro-batch's forward
// and backward passes as blocks of its colour (forward light, backward dark, numbered), the
// bubble blank, and under each row the gradient reduction, the update and the weight casts.
#include <string>

#include "cost/step_timeline.h"

namespace irc {

std::string schedulePlotSvg(const StepTimeline& timeline, const std::string& title);

}  // namespace irc
