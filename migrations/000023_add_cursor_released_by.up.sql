-- released_by names the dispatcher that last released a cursor (a rebalance hands
-- it on): its next owner replays that dispatcher's report stream, as after a
-- takeover, so what was delivered but not yet committed at the release is not
-- sent again. A claim clears it.
ALTER TABLE cursors ADD COLUMN released_by VARCHAR(64) NOT NULL DEFAULT '';
