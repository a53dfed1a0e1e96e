CREATE TABLE `nested_instruction` (
	`session_id` text NOT NULL,
	`directory` text NOT NULL,
	`path` text NOT NULL,
	`time_created` integer NOT NULL,
	PRIMARY KEY(`session_id`, `directory`, `path`),
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
