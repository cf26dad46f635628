-- When each retry row's due_at and each dispatcher's lease were last set, on the
-- database clock. A row set later than NOW(3) proves the clock stepped back since
-- (an NTP step, a VM restore); ClockRebase then moves its deadline to NOW(3) plus
-- the wait it was given, so no due time or lease is ever further ahead of now than
-- its own length. idx_retry_scheduled keeps that check an empty index range while
-- the clock behaves.
ALTER TABLE retry_messages
  ADD COLUMN scheduled_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  ADD KEY idx_retry_scheduled (scheduled_at);
ALTER TABLE dispatchers
  ADD COLUMN renewed_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3);
