/**
 * The languages of the golden images (docker/<language>/): the names a configuration, an
 * action's `language` and the CLI accept. Their images are in images/language-images.ts,
 * a project's language in project/project-language.ts.
 */

export const LANGUAGES = ['python', 'nodejs', 'java', 'go', 'ruby', 'php', 'dotnet', 'powershell'] as const;
export type Language = (typeof LANGUAGES)[number];

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}
