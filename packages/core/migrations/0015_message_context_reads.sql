ALTER TABLE `message` ADD `changed_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `message_compaction_idx` ON `message` (`session_id`,`seq`) WHERE type = 'compaction';--> statement-breakpoint
CREATE INDEX `message_changed_idx` ON `message` (`session_id`,`changed_seq`);