import { describe, expect, test } from 'vitest';
import { choiceAnswer, choicesList } from '../../src/model/questions.js';

describe('choiceAnswer', () => {
  const question = { choices: ['main', 'dev', 'C, C++'] };

  test('a question without choices takes any text as it is', () => {
    expect(choiceAnswer({}, ' 2 ')).toEqual({ answer: ' 2 ' });
    expect(choiceAnswer({ choices: [] }, 'anything')).toEqual({ answer: 'anything' });
  });

  test('a choice is taken as itself, ignoring case and surrounding blanks', () => {
    expect(choiceAnswer(question, 'dev')).toEqual({ answer: 'dev' });
    expect(choiceAnswer(question, '  MAIN ')).toEqual({ answer: 'main' });
    expect(choiceAnswer(question, 'C, C++')).toEqual({ answer: 'C, C++' });
  });

  test("a choice's number, from 1, stands for the choice", () => {
    expect(choiceAnswer(question, '2')).toEqual({ answer: 'dev' });
    expect(choiceAnswer(question, ' 3')).toEqual({ answer: 'C, C++' });
  });

  test('a choice that is itself a number wins over the number of another', () => {
    expect(choiceAnswer({ choices: ['10', '2', 'x'] }, '2')).toEqual({ answer: '2' });
  });

  test('anything else is refused with the numbered list', () => {
    expect(choiceAnswer(question, 'maybe')).toEqual({ refused: '"maybe" is not one of the choices: 1. "main", 2. "dev", 3. "C, C++"' });
    expect(choiceAnswer(question, '0')).toHaveProperty('refused');
    expect(choiceAnswer(question, '4')).toHaveProperty('refused');
    expect(choiceAnswer(question, '1.5')).toHaveProperty('refused');
  });

  test('choicesList numbers and quotes each choice', () => {
    expect(choicesList(['a/b', 'c'])).toBe('1. "a/b", 2. "c"');
  });
});
