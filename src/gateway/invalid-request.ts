/** The gateway's 400: a request body that is not what the API takes, with the field it is about. */
/** A 400 with OpenAI's `param` field. */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}
