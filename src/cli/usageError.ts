import { ConfigError } from '../errors.ts';

/** A command line that cannot be run as given (unknown option, missing argument). Exit code 2. */
export class UsageError extends ConfigError {
  override readonly code = 'USAGE';
  /** The command whose usage to show with the message, e.g. `views get`. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}
