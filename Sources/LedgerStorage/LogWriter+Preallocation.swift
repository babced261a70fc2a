// The commit thread's side of preallocated segment space (docs/FORMAT.md, "Preallocated space";
// `SegmentPreallocator` runs the extensions). Runs only on the writer's commit thread.

extension LogWriter {
    /// Zero-filled space of the active segment. Owned by the commit thread.
    struct PreallocationState {
        var segmentBase: UInt64
        /// Zeros written (and synced, or written by a failed group the file was cut back from) up to
        /// here; an extension starts at the larger of this and the segment's end.
        var zeroEnd: UInt64
        /// Set after an extension failed (for example ENOSPC): the rest of this segment is appended
        /// to without preallocation.
        var disabled = false
    }

    /// Before the commit thread writes up to `end` in segment `base`: waits for an extension in flight
    /// that starts below `end`, so its zeros never land over a batch.
    func awaitPreallocation(segmentBase base: UInt64, writingUpTo end: UInt64) {
        guard let preallocator, preallocation?.segmentBase == base,
              let start = preallocator.inFlightStart, end > start else { return }
        absorb(preallocator.finish())
    }

    /// Waits for any extension in flight (before a seal, or before cutting the file back).
    func finishPreallocation() {
        guard let preallocator else { return }
        absorb(preallocator.finish())
    }

    /// After a group is written: starts the next extension when less than half a chunk of zeros is
    /// left ahead of the active segment's end and none is in flight. Extensions stop at the segment
    /// size limit, since the segment rolls there.
    func extendPreallocationIfDue() {
        guard let preallocator else { return }
        let (idle, outcome) = preallocator.takeOutcomeIfIdle()
        absorb(outcome)
        guard idle, let state = preallocation, state.segmentBase == active.base, !state.disabled else { return }
        let chunk = UInt64(preallocator.chunkBytes)
        let limit = UInt64(options.segmentBytesMax)
        var start = max(state.zeroEnd, active.endOffset)
        guard start - active.endOffset < chunk / 2 else { return }
        // With no zeros ahead (a new segment, or appends outran the last extension), start an eighth
        // of a chunk ahead: the next groups append below it meanwhile instead of waiting for it.
        if start == active.endOffset { start += chunk / 8 }
        guard start < limit else { return }
        preallocator.start(file: active.file, segmentBase: active.base, offset: start, count: Int(min(chunk, limit - start)))
    }

    private func absorb(_ outcome: SegmentPreallocator.Outcome?) {
        guard let outcome, var state = preallocation, state.segmentBase == outcome.segmentBase else { return }
        if let zeroEnd = outcome.zeroEnd {
            state.zeroEnd = max(state.zeroEnd, zeroEnd)
        } else {
            state.disabled = true
            logger.warning("could not preallocate segment space; appending without it until the next segment",
                           metadata: ["segment": "\(LogDirectory.displayName(base: outcome.segmentBase))",
                                      "error": "\(outcome.error.map { "\($0)" } ?? "unknown")"])
        }
        preallocation = state
    }
}
