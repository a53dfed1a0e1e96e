-- The event log's commit order as a real column (dialect-neutral, instead of SQLite's rowid): existing
-- rows keep their rowid order, and the empty-key row of event_sequence (until now the rowid floor
-- kept by removals) becomes the counter of positions handed out, never below the largest one. On a
-- log without rows it is created by the first append.
ALTER TABLE `event` ADD `position` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `event_position_index` ON `event` (`position`);--> statement-breakpoint
UPDATE `event` SET `position` = `rowid`;--> statement-breakpoint
INSERT INTO `event_sequence` (`aggregate_id`, `seq`) SELECT '', (SELECT max(`position`) FROM `event`) WHERE EXISTS (SELECT 1 FROM `event`)
ON CONFLICT (`aggregate_id`) DO UPDATE SET `seq` = CASE WHEN `excluded`.`seq` > `event_sequence`.`seq` THEN `excluded`.`seq` ELSE `event_sequence`.`seq` END;
