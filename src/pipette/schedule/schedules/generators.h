// The built-in schedule generators, one per file in this folder; registry.cc lists them. Internal
// to the schedule layer: users go through registry.h.
#pragma once

#include "pipette/schedule/schedule_generator.h"

namespace pipette::schedules {

const ScheduleGenerator& Gpipe();
const ScheduleGenerator& OneFOneB();
const ScheduleGenerator& EagerOneFOneB();
const ScheduleGenerator& ZbH1();
const ScheduleGenerator& ZbH2();
const ScheduleGenerator& InterleavedOneFOneB();
const ScheduleGenerator& InterleavedOneFOneBPlusOne();
const ScheduleGenerator& KimiK2();
const ScheduleGenerator& InterleavedGpipe();
const ScheduleGenerator& InterleavedZeroBubble();
const ScheduleGenerator& Zbv();
const ScheduleGenerator& DualPipe();
const ScheduleGenerator& DualPipeV();
const ScheduleGenerator& VHalf();
const ScheduleGenerator& VMin();

}  // namespace pipette::schedules
